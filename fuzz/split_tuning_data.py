"""Splits a TuningData protobuf into one TuningData per module (small fuzz seeds).

usage: split_tuning_data.py FILE.pb OUT_DIR
TuningData is `repeated ModuleTuningData modules = 1`: each top-level field-1 record, written alone,
is a TuningData holding that one module. No protobuf library needed.
"""
import os
import sys


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


data = open(sys.argv[1], "rb").read()
out = sys.argv[2]
base = os.path.splitext(os.path.basename(sys.argv[1]))[0]
i = n = 0
while i < len(data):
    start = i
    tag, i = varint(data, i)
    if tag & 7 != 2:
        break  # only length-delimited fields are expected at the top level
    size, i = varint(data, i)
    i += size
    if tag >> 3 == 1 and i - start <= 65536:
        with open(os.path.join(out, "%s_module%03d.pb" % (base, n)), "wb") as f:
            f.write(data[start:i])
        n += 1
