// Keeps a folder library non-empty while its sources are being written.
