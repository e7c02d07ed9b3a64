// RunConfig without TOML: names of the config-only enums, range and consistency checks, key
// locations, thread resolution. The TOML reader is trainer/config.cpp, the writer config_dump.cpp.
#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>
#include <utility>

#include "data/collection.h"
#include "gnn/core/check.h"
#include "hwmodel/hardware.h"
#include "trainer/config_messages.h"
#include "trainer/config_schema.h"
#include "util/user_input.h"

namespace segrank {
namespace cfg {
namespace {
constexpr EnumName<Holdout> kHoldoutNames[] = {{Holdout::kGraphs, "graphs"},
                                               {Holdout::kConfigs, "configs"}};
constexpr EnumName<EvalMetric> kEvalMetricNames[] = {{EvalMetric::kKaggle, "kaggle"},
                                                     {EvalMetric::kKendall, "kendall"},
                                                     {EvalMetric::kOpa, "opa"},
                                                     {EvalMetric::kSlowdown1, "slowdown_1"},
                                                     {EvalMetric::kSlowdown5, "slowdown_5"},
                                                     {EvalMetric::kSlowdown10, "slowdown_10"}};
}  // namespace

std::span<const EnumName<Holdout>> enum_names(Holdout) { return kHoldoutNames; }
std::span<const EnumName<EvalMetric>> enum_names(EvalMetric) { return kEvalMetricNames; }
std::string_view to_string(Holdout v) { return enum_name(v); }
std::string_view to_string(EvalMetric v) { return enum_name(v); }

namespace detail {

std::string format_double(double v) {
    char buf[64];
    // Shortest round-trip digits; plain decimals for everyday magnitudes (0.0003, not 3e-04).
    const double a = std::fabs(v);
    const bool fixed = a == 0 || (a >= 1e-5 && a < 1e15);
    auto res = fixed ? std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed)
                     : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    std::string s(buf, res.ptr);
    if (s == "inf") return "inf";
    if (s == "-inf") return "-inf";
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
}

std::string quote_toml(std::string_view s) {
    std::string out = "\"";
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (ch) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\r':
                out += "\\r";
                break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += ch;
                }
        }
    }
    return out + "\"";
}

std::string Check::describe() const {
    auto num = [](double x) {
        std::string s = format_double(x);
        if (s.size() > 2 && s.ends_with(".0")) s.resize(s.size() - 2);
        return s;
    };
    if (std::isfinite(lo) && std::isfinite(hi))
        return str("in ", lo_open ? "(" : "[", num(lo), ", ", num(hi), hi_open ? ")" : "]");
    if (std::isfinite(lo)) return str(lo_open ? "> " : ">= ", num(lo));
    if (std::isfinite(hi)) return str(hi_open ? "< " : "<= ", num(hi));
    return "a finite number";
}

namespace {

std::string spell(double v) {
    std::string s = format_double(v);
    if (s.size() > 2 && s.ends_with(".0")) s.resize(s.size() - 2);
    return s;
}

/// Applies each key's Check to the built value.
class RangeChecker {
public:
    explicit RangeChecker(std::vector<Problem>* out) : out_(out) {}
    void section(std::string_view name, std::string_view) { section_ = name; }

    template <typename T>
    void field(std::string_view key, const T& value, std::string_view, Check chk = {}) {
        const std::string dotted = str(section_, ".", key);
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
            const auto d = static_cast<double>(value);
            // An integer key shows the value it holds (4611686018427387904, not 4.6e+18).
            if (!chk.ok(d)) {
                std::string got;
                if constexpr (std::is_integral_v<T>)
                    got = std::to_string(value);
                else
                    got = spell(d);
                out_->push_back({dotted, str("expected ", chk.describe(), ", got ", got)});
            }
        } else if constexpr (std::is_same_v<T, std::string>) {
            if (!check_text(dotted, value) && chk.nonempty && value.empty())
                out_->push_back({dotted, "expected a non-empty string, got \"\""});
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            for (size_t i = 0; i < value.size(); ++i)
                if (check_text(dotted, value[i], str("element ", i, " "))) break;
        }
    }

    /// Keys whose value holds a control character: every other problem about them (or quoting
    /// their value) is dropped, as it would echo that value.
    const std::set<std::string>& garbled() const { return garbled_; }

private:
    /// A string value with a control character (a NUL would cut the path the run opens and every
    /// message quoting it) is refused naming the key; true when it was.
    bool check_text(const std::string& dotted, std::string_view text, std::string item = "") {
        const auto bad = control_character_problem(text);
        if (!bad) return false;
        const bool path = dotted == "data.root" || dotted == "data.ingest" ||
                          dotted == "train.run_dir" || dotted == "eval.indices";
        out_->push_back({dotted, str(item, *bad, "; expected ", path ? "a path" : "a name",
                                     " (no control characters)")});
        garbled_.insert(dotted);
        return true;
    }

    std::vector<Problem>* out_;
    std::string section_;
    std::set<std::string> garbled_;
};

// The split names of the collection layout (data/collection.h parse_split): "train", "valid",
// "test", "unknown".
bool valid_split_name(std::string_view s) {
    for (Split v : {Split::kTrain, Split::kValid, Split::kTest, Split::kUnknown})
        if (s == to_string(v)) return true;
    return false;
}

bool valid_collection(std::string_view c) {
    static const std::set<std::string_view> kValid = {"tile:xla", "layout:xla:default",
                                                      "layout:xla:random", "layout:nlp:default",
                                                      "layout:nlp:random"};
    return kValid.count(c) != 0;
}

// Each check_* step appends the problems of one part of the config to `p`, in key order.

// data.*: the collections (valid, distinct, one task), the holdout folds and splits (with
// eval.split, the split `segrank evaluate` scores), ingest paths.
void check_data(const RunConfig& c, std::vector<Problem>& p) {
    auto add = [&](std::string key, std::string msg) {
        p.push_back({std::move(key), std::move(msg)});
    };
    std::set<std::string> seen;
    for (const auto& col : c.data.collections) {
        if (!valid_collection(col))
            add("data.collections",
                str("expected \"tile:xla\" or \"layout:<xla|nlp>:<default|random>\", got \"", col,
                    "\""));
        else if (!seen.insert(col).second)
            add("data.collections", str("collection \"", col, "\" listed twice"));
    }
    {  // one run trains one task (docs/config.md): decided by the names alone
        const std::string* tile = nullptr;
        const std::string* layout = nullptr;
        for (const auto& col : c.data.collections) {
            if (!valid_collection(col)) continue;
            (col.starts_with("tile") ? tile : layout) = &col;
        }
        if (tile && layout)
            add("data.collections",
                str("one run trains one task, but \"", *tile, "\" is tile and \"", *layout,
                    "\" is layout (train one run per task)"));
    }
    const int folds = c.data.holdout_folds;
    if (folds < -1 || folds == 1)
        add("data.holdout_folds",
            str("expected -1 (leave-one-out), 0 (valid split) or >= 2, got ", folds));
    else if (folds >= 2 && c.data.holdout_fold >= folds)
        add("data.holdout_fold",
            str("expected < data.holdout_folds = ", folds, ", got ", c.data.holdout_fold));
    else if (folds == 0 && c.data.holdout_fold != 0)
        add("data.holdout_fold",
            str("applies with data.holdout_folds >= 2 (k-fold) or -1 (leave-one-out), but "
                "data.holdout_folds = 0 (the holdout is data.valid_split or data.holdout = "
                "\"configs\"), so data.holdout_fold = ",
                c.data.holdout_fold, " would be ignored: set data.holdout_folds or drop it"));
    if (folds != 0 && c.data.holdout == Holdout::kConfigs)
        add("data.holdout_folds",
            str("folds apply to holdout = \"graphs\", got ", folds, " with holdout = \"configs\""));
    if (folds == 0 && c.data.holdout == Holdout::kGraphs &&
        c.data.train_split == c.data.valid_split)
        add("data.valid_split",
            str("expected a split other than data.train_split = \"", c.data.train_split,
                "\" (or use holdout_folds / holdout = \"configs\")"));
    if (c.data.holdout == Holdout::kConfigs && c.data.holdout_fraction == 0.0)
        add("data.holdout_fraction",
            str("expected a fraction in (0, 1) with data.holdout = \"configs\", got ",
                format_double(c.data.holdout_fraction),
                " (a holdout that holds out no config leaves nothing to evaluate)"));
    const std::pair<const char*, const std::string*> splits[] = {
        {"data.train_split", &c.data.train_split},
        {"data.valid_split", &c.data.valid_split},
        {"eval.split", &c.eval.split}};
    for (const auto& [key, value] : splits) {
        const std::string& split = *value;
        if (!split.empty() && !valid_split_name(split))
            add(key, str("expected one of \"train\", \"valid\", \"test\", \"unknown\" (the split "
                         "folders of the collection layout, docs/files.md), got \"",
                         split, "\""));
    }
    for (const auto& f : c.data.ingest)
        if (f.empty()) add("data.ingest", "expected non-empty paths, got \"\"");
    // A name the system refuses (File name too long) is refused here, naming the key, the same
    // under train --check as in the run (which would fail on it with the name echoed whole).
    const std::pair<const char*, const std::string*> paths[] = {{"data.root", &c.data.root},
                                                                {"eval.indices", &c.eval.indices}};
    for (const auto& [key, value] : paths)
        if (auto why = path_length_problem(*value)) add(key, std::move(*why));
    for (const auto& f : c.data.ingest)
        if (auto why = path_length_problem(f)) add("data.ingest", std::move(*why));
}

// model.*: options that apply to tile collections only.
void check_model(const RunConfig& c, std::vector<Problem>& p) {
    auto add = [&](std::string key, std::string msg) {
        p.push_back({std::move(key), std::move(msg)});
    };
    if (c.model.config_join == ConfigJoin::kLate) {
        for (const auto& col : c.data.collections)
            if (col.starts_with("layout"))
                add("model.config_join",
                    str("\"late\" applies to tile collections only, but data.collections has \"",
                        col, "\""));
    }
    if (c.model.tile_cost_features) {
        for (const auto& col : c.data.collections)
            if (col.starts_with("layout"))
                add("model.tile_cost_features",
                    str("true applies to tile collections only, but data.collections has \"", col,
                        "\""));
    }
}

// loss.terms: at least one, weights >= 0 and not all 0, each kind once.
void check_loss(const RunConfig& c, std::vector<Problem>& p) {
    auto add = [&](std::string key, std::string msg) {
        p.push_back({std::move(key), std::move(msg)});
    };
    if (c.loss.terms.empty()) add("loss.terms", "expected at least one term, got []");
    std::set<LossKind> kinds;
    double total = 0;
    bool bad_weight = false;
    for (const auto& t : c.loss.terms) {
        if (!std::isfinite(t.weight) || t.weight < 0) {
            add("loss.terms",
                str("expected weight >= 0 for \"", to_string(t.kind), "\", got ", spell(t.weight)));
            bad_weight = true;
        } else if (t.weight > kMaxLossWeight) {
            add("loss.terms",
                str("expected weight <= ", spell(kMaxLossWeight), " for \"", to_string(t.kind),
                    "\" (docs/config.md#model-size-bounds), got ", spell(t.weight)));
            bad_weight = true;
        } else {
            total += t.weight;
        }
        if (!kinds.insert(t.kind).second)
            add("loss.terms", str("term \"", to_string(t.kind), "\" listed twice"));
    }
    if (!c.loss.terms.empty() && !bad_weight && total <= 0)
        add("loss.terms", "expected some weight > 0, got all weights 0");
}

// sampling.* and train.*: configs per graph, the pool, the length of the run, early stopping.
void check_sampling_train(const RunConfig& c, std::vector<Problem>& p) {
    auto add = [&](std::string key, std::string msg) {
        p.push_back({std::move(key), std::move(msg)});
    };
    // A ranking loss compares configs of one graph: with one config per graph it has no pair; mse
    // standardizes each graph's targets over its sampled configs, so one config's target is 0.
    // Either way the loss is 0 at every step and trains nothing while the run reports success.
    if (c.sampling.configs == 1)
        add("sampling.configs",
            "expected >= 2 (the ranking losses compare configs of a graph and mse standardizes "
            "runtimes over a graph's sampled configs: with one config every loss is 0), got 1");
    if (c.sampling.config_pool > 0 && c.sampling.config_pool < c.sampling.configs)
        add("sampling.config_pool", str("expected 0 or >= sampling.configs = ", c.sampling.configs,
                                        ", got ", c.sampling.config_pool));
    // AdamW multiplies each weight matrix by 1 - lr * weight_decay per step (gnn/optim.cpp).
    if (c.optim.lr * c.optim.weight_decay >= 1 && c.optim.lr <= kMaxLearningRate &&
        c.optim.weight_decay <= kMaxWeightDecay)
        add("optim.weight_decay",
            str("expected optim.lr * optim.weight_decay < 1 (AdamW scales each weight matrix by "
                "1 - lr * weight_decay per step: 0 or less zeroes or flips it), got ",
                spell(c.optim.lr), " * ", spell(c.optim.weight_decay)));
    if (c.train.steps == 0 && c.train.epochs == 0)
        add("train.steps", "expected train.steps > 0 or train.epochs > 0, got both 0");
    if (c.train.patience > 0 && c.train.eval_every == 0)
        add("train.patience", str("early stopping needs train.eval_every > 0, got patience ",
                                  c.train.patience, " with eval_every 0"));
}

// eval.cache_mb is taken out of eval.memory_mb (gst/inference_budget.h): at most half of it.
void check_eval(const RunConfig& c, std::vector<Problem>& p) {
    if (c.eval.cache_mb > c.eval.memory_mb / 2 && c.eval.memory_mb >= 16)
        p.push_back(
            {"eval.cache_mb",
             str("expected at most half of eval.memory_mb = ", c.eval.memory_mb, " (",
                 c.eval.memory_mb / 2,
                 " MiB: the inference cache is taken out of the memory budget, the rest "
                 "holds the chunks), got ",
                 c.eval.cache_mb,
                 "; lower eval.cache_mb (-1 = a quarter of the budget) or raise eval.memory_mb")});
}

// hwmodel.hardware: a known preset when set.
void check_hwmodel(const RunConfig& c, std::vector<Problem>& p) {
    auto add = [&](std::string key, std::string msg) {
        p.push_back({std::move(key), std::move(msg)});
    };
    const auto names = hw::hardware_names();
    if (!c.hwmodel.hardware.empty() &&
        std::find(names.begin(), names.end(), c.hwmodel.hardware) == names.end()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "\"" : ", \"") + n + "\"";
        add("hwmodel.hardware",
            str("expected one of ", list, ", got \"", c.hwmodel.hardware, "\""));
    }
}

// dist.segment_units: a per_step split of segments and configs, summed before a loss without
// parameters (score_sum), configs independent of each other.
void check_segment_units(const RunConfig& c, std::vector<Problem>& p) {
    if (!c.dist.segment_units) return;
    if (c.dist.ownership != OwnershipMode::kPerStep)
        p.push_back({"dist.segment_units",
                     str("applies with dist.ownership = \"per_step\" (any rank trains any graph), "
                         "got \"",
                         to_string(c.dist.ownership), "\"")});
    if (c.dist.slice_configs)
        p.push_back({"dist.segment_units",
                     "and dist.slice_configs = true exclude each other (segment units already cut "
                     "large segments into config ranges): set one of them"});
    if (c.model.aggregate != SegmentAggregate::kScoreSum)
        p.push_back({"dist.segment_units",
                     str("needs model.aggregate = \"score_sum\" (segment scores summed before the "
                         "loss), got \"",
                         to_string(c.model.aggregate), "\"")});
    if (c.model.config_attention)
        p.push_back({"dist.segment_units",
                     "cannot split a graph's configs with model.config_attention = true (a "
                     "config's score depends on the other configs of its graph)"});
}

// dist.slice_configs: a per_step split of configs whose scores are independent of each other.
void check_dist(const RunConfig& c, std::vector<Problem>& p) {
    check_segment_units(c, p);
    if (!c.dist.slice_configs) return;
    if (c.dist.ownership != OwnershipMode::kPerStep)
        p.push_back({"dist.slice_configs",
                     str("applies with dist.ownership = \"per_step\" (any rank trains any graph), "
                         "got \"",
                         to_string(c.dist.ownership), "\"")});
    if (c.model.config_attention)
        p.push_back({"dist.slice_configs",
                     "cannot split a graph's configs with model.config_attention = true (a "
                     "config's score depends on the other configs of its graph)"});
}

}  // namespace

std::vector<Problem> check_config(const RunConfig& c) {
    std::vector<Problem> p;
    RangeChecker rc(&p);
    visit_schema(rc, c);
    check_data(c, p);
    check_model(c, p);
    check_loss(c, p);
    check_sampling_train(c, p);
    check_eval(c, p);
    check_hwmodel(c, p);
    check_dist(c, p);
    // A problem about a value with a control character, other than saying so, would quote it.
    std::vector<Problem> out;
    for (auto& x : p) {
        const bool garbled = rc.garbled().count(x.key) != 0;
        const bool first =
            garbled && x.message.find("(no control characters)") != std::string::npos;
        if (first || (!garbled && !control_character_problem(x.message)))
            out.push_back(std::move(x));
    }
    return out;
}

}  // namespace detail
}  // namespace cfg

void validate_config(const RunConfig& cfg) {
    const auto problems = cfg::detail::check_config(cfg);
    if (problems.empty()) return;
    std::string msg;
    for (const auto& p : problems) msg += (msg.empty() ? "" : "\n") + p.key + ": " + p.message;
    throw Error(msg);
}

std::string key_location(const RunConfig& cfg, const std::string& dotted) {
    if (auto it = cfg.sources.at.find(dotted); it != cfg.sources.at.end()) return it->second;
    return cfg.sources.file;
}

int edit_distance(std::string_view a, std::string_view b) {
    std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = static_cast<int>(i);
        for (size_t j = 1; j <= b.size(); ++j) {
            const int sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

int resolve_threads(const RunConfig& cfg, int local_size, int hardware_threads) {
    const int ls = std::max(1, local_size);
    const int requested = ls > 1 ? cfg.dist.threads_per_rank : cfg.train.threads;
    if (requested > 0) return requested;
    return std::max(1, hardware_threads / ls);
}

}  // namespace segrank
