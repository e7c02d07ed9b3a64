// Measurement backends of `segrank tune` (docs/tune.md#measurement-backends): a Measurer times a
// batch of configurations of the one graph it was made for. `recorded` looks runtimes up in the
// graph's file, `hwmodel[:NAME]` runs the analytical model (hwmodel/) or another cost family
// (hwmodel/costs/) as a simulator with log-normal noise, `exec:CMD` asks a user process over JSON
// lines (docs/tune.md#the-exec-protocol).
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gnn/core/check.h"
#include "tune/config.h"

namespace segrank::tune {

/// The outcome of measuring one config: a runtime, or the reason there is none. A failed
/// measurement is data (the caller logs and skips it), never an exception.
struct Measurement {
    std::optional<double> runtime_ns;  ///< finite, > 0, ns; set iff the measurement succeeded
    std::string error;                 ///< why it failed ("" on success)

    bool ok() const { return runtime_ns.has_value(); }
    static Measurement success(double ns) { return {ns, {}}; }
    static Measurement failure(std::string why) { return {std::nullopt, std::move(why)}; }
};

/// Times configurations of one graph (the TuneGraph it was created for, which must outlive it).
class Measurer {
public:
    virtual ~Measurer() = default;

    /// result[i] is the measurement of configs[i] (same length). A config that cannot be measured
    /// (not recorded, rejected by the model, the process failed, timed out or answered garbage)
    /// gives Measurement::failure with the reason; nothing here throws for that. Throws
    /// segrank::Error only when a config does not belong to the graph at all (wrong task, or a
    /// layout row count other than nc * 18, or a tile row of other than 24 values).
    virtual std::vector<Measurement> measure(std::span<const Config> configs) = 0;

    /// The backend as given to --measure ("recorded", "hwmodel", "hwmodel:NAME", "exec:CMD").
    virtual std::string name() const = 0;
};

/// Which backend --measure names.
enum class MeasureKind { kRecorded, kHwmodel, kExec };

/// A parsed --measure value: "recorded", "hwmodel" (arg ""), "hwmodel:NAME" (arg NAME: a cost
/// family of `segrank synth --cost NAME`, hw::cost_family_names(); "default" is tpu_v3, as is
/// plain "hwmodel"), "exec:CMD" (arg CMD, run by /bin/sh -c).
struct MeasureSpec {
    MeasureKind kind = MeasureKind::kRecorded;
    std::string arg;
};

/// Parses a --measure value. Throws segrank::Error "--measure '<text>': expected recorded,
/// hwmodel, hwmodel:NAME or exec:CMD" on anything else (including "exec:" with an empty command),
/// and "--measure 'hwmodel:X': unknown cost family 'X'; valid names for layout graphs: ...; for
/// tile graphs: ..." when X is not a cost family. Whether the family fits the graph's collection
/// is checked by make_measurer.
MeasureSpec parse_measure_spec(std::string_view text);

/// Knobs of the backends (CLI options of `segrank tune`).
struct MeasureOptions {
    double noise_sigma = 0.0;  ///< hwmodel: runtime = cost ns x exp(sigma N(0,1)); in [0, 5]
    uint64_t seed = 0;         ///< hwmodel: noise stream; the k-th measurement of a config draws
                               ///< from Rng::derive(seed, hash(config rows), k, "tune-measure")
    double timeout_s = 60.0;   ///< exec: per-request timeout (seconds, > 0)
    double start_timeout_s = 30.0;  ///< exec: extra time for the first request of a newly
                                    ///< started process (the harness's own startup), >= 0
    int max_restarts = 3;  ///< exec: process restarts (after death or timeout) before every
                           ///< further request fails with the reason
    /// Where backends report what they skip or restart (one line each, no newline); default:
    /// nothing. The CLI passes a function writing to stderr.
    std::function<void(const std::string&)> log;
    /// exec: when set and nonzero (the CLI's SIGINT/SIGTERM flag), a request being waited for is
    /// given up within about 0.1 s: the process is killed and measure() throws
    /// MeasurementInterrupted, so the config counts as not measured (not as failed).
    const std::atomic<int>* stop = nullptr;
};

/// Thrown by a backend whose measurement was interrupted by MeasureOptions::stop: nothing about
/// the config is known; the caller records nothing for it.
class MeasurementInterrupted : public Error {
public:
    using Error::Error;
};

/// Throws segrank::Error (naming the graph) unless `c` has the shape of a config of `g`: a tile
/// row of 24 values for a tile graph, nc * 18 layout values for a layout graph of nc configurable
/// nodes. Every backend checks this before measuring.
void check_config_shape(const TuneGraph& g, const Config& c);

/// The backend `spec` names for `graph` (borrowed: must outlive the result). `exec` starts the
/// process on the first measure() call. Throws segrank::Error when the options are out of range,
/// when `recorded` is asked for a graph without positive recorded runtimes (a test split), when
/// hwmodel:NAME names a family of the other collection (a tile family for a layout graph or vice
/// versa; the message lists the valid names for the graph's collection), or when hwmodel cannot
/// cost the graph (naming graph.path). hwmodel:NAME costs a config with the function `segrank
/// synth --cost NAME` labels with (hw::make_tile_cost / hw::make_layout_cost, TPU v3 core, default
/// CostOptions) on hw::module_from_graph of the graph (docs/tune.md#measurement-backends).
std::unique_ptr<Measurer> make_measurer(const MeasureSpec& spec, const TuneGraph& graph,
                                        const MeasureOptions& options);

/// make_measurer(parse_measure_spec(text), graph, options): the backend a --measure value names.
std::unique_ptr<Measurer> make_measurer(std::string_view text, const TuneGraph& graph,
                                        const MeasureOptions& options);

}  // namespace segrank::tune
