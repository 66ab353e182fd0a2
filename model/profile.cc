#include "model/profile.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/batch_list.h"
#include "model/config.h"
#include "model/error.h"
#include "model/json_field.h"
#include "model/output_file.h"
#include "model/scenario.h"
#include "model/text.h"

namespace megacut::model {
namespace {

using nlohmann::json;

using Node = model::JsonField;

constexpr int kMaxInt = std::numeric_limits<int>::max();

// The longest duration a profile may hold: an hour. Nothing the profiler times (a kernel, a
// task, a gap, a launch) comes near it; a larger value is a damaged or hand-edited file, which
// summed over a stage once wrapped 64-bit nanoseconds into negative or plausible-looking times.
constexpr double kMaxDurationNs = 3600e9;

// What a duration times: the work of a kernel or a task, which no measurement finds to take no
// time at all, or a gap, launch or overhead, which may be 0 (PDL hides a kernel gap).
enum class Duration { work, gap };

// Latency statistics in nanoseconds, each figure at most kMaxDurationNs and, for work, its
// minimum (so every figure) above 0.
LatencyStats duration_from(const Node& n, Duration what) {
  const LatencyStats s = n.stats_ns();
  const std::pair<const char*, double> figures[] = {
      {"mean", s.mean}, {"stdev", s.stdev}, {"min", s.min}, {"p50", s.p50},
      {"p90", s.p90},   {"p95", s.p95},     {"p99", s.p99}, {"max", s.max}};
  for (const auto& [key, value] : figures) {
    if (value > kMaxDurationNs) {
      n.at(key).fail(json(value).dump() +
                     " ns is more than an hour: not a duration the profiler measures");
    }
  }
  if (what == Duration::work && !(s.min > 0)) {
    n.at("min").fail("expected a duration above 0 ns (a kernel or task takes some time), got " +
                     json(s.min).dump());
  }
  return s;
}

json launch_to_json(const LaunchConfig& c) {
  return {{"grid", c.grid},
          {"block", c.block},
          {"registers", c.registers},
          {"smem_bytes", c.smem_bytes}};
}

// A launch's [x, y, z], each within CUDA's limits (`most`), so that their product, the CTAs
// the simulator counts, stays within 64 bits.
std::array<int64_t, 3> dims(const Node& n, const std::array<int64_t, 3>& most) {
  const std::vector<Node> items = n.list();
  if (items.size() != 3) n.fail("expected [x, y, z]");
  return {items[0].integer(1, most[0]), items[1].integer(1, most[1]), items[2].integer(1, most[2])};
}

LaunchConfig launch_from(const Node& n) {
  LaunchConfig c;
  c.grid = dims(n.at("grid"), {kMaxInt, 65535, 65535});
  c.block = dims(n.at("block"), {1024, 1024, 64});
  c.registers = static_cast<int>(n.at("registers").integer(0, 255));
  c.smem_bytes = n.at("smem_bytes").integer(0);
  return c;
}

json region_config_to_json(const RegionConfig& c) {
  json j = {{"threads", c.threads}, {"registers", c.registers}, {"smem_bytes", c.smem_bytes}};
  if (c.ring_bytes > 0) j["ring_bytes"] = c.ring_bytes;
  return j;
}

RegionConfig region_config_from(const Node& n) {
  RegionConfig c;
  c.threads = static_cast<int>(n.at("threads").integer(1, 1024));
  c.registers = static_cast<int>(n.at("registers").integer(1, 255));
  c.smem_bytes = n.at("smem_bytes").integer(0);
  if (n.has("ring_bytes")) c.ring_bytes = n.at("ring_bytes").integer(0, c.smem_bytes);
  return c;
}

json conv_to_json(const ConvKernel& k) {
  json conv = {{"kernel", k.kernel},
               {"provider", k.provider},
               {"duration_ns", model::stats_to_json(k.duration_ns)},
               {"launch", launch_to_json(k.launch)}};
  if (k.gap_to_next_ns) conv["gap_to_next_ns"] = model::stats_to_json(*k.gap_to_next_ns);
  if (k.pdl_step_ns) conv["pdl_step_ns"] = model::stats_to_json(*k.pdl_step_ns);
  if (k.gap_before_ns) conv["gap_before_ns"] = model::stats_to_json(*k.gap_before_ns);
  if (k.standalone_cold_ns)
    conv["standalone_cold_ns"] = model::stats_to_json(*k.standalone_cold_ns);
  if (k.standalone_warm_ns)
    conv["standalone_warm_ns"] = model::stats_to_json(*k.standalone_warm_ns);
  return conv;
}

ConvKernel conv_from(const Node& c) {
  ConvKernel k;
  k.kernel = c.at("kernel").string();
  if (c.has("provider")) {
    k.provider = c.at("provider").string();
    if (k.provider != "ours" && k.provider != "cublas") {
      c.at("provider").fail("expected \"ours\" or \"cublas\", got \"" + k.provider + "\"");
    }
  }
  k.duration_ns = duration_from(c.at("duration_ns"), Duration::work);
  // Absent for the stage's last op; the simulator says so if an absent gap is needed.
  if (c.has("gap_to_next_ns"))
    k.gap_to_next_ns = duration_from(c.at("gap_to_next_ns"), Duration::gap);
  if (c.has("pdl_step_ns")) {
    k.pdl_step_ns = duration_from(c.at("pdl_step_ns"), Duration::gap);
    if (k.provider != "ours") c.at("pdl_step_ns").fail("only our kernels launch with PDL");
  }
  if (c.has("gap_before_ns")) {
    k.gap_before_ns = duration_from(c.at("gap_before_ns"), Duration::gap);
    if (k.provider != "cublas") c.at("gap_before_ns").fail("only a cuBLASLt kernel has one");
  }
  k.launch = launch_from(c.at("launch"));
  if (c.has("standalone_cold_ns"))
    k.standalone_cold_ns = duration_from(c.at("standalone_cold_ns"), Duration::work);
  if (c.has("standalone_warm_ns"))
    k.standalone_warm_ns = duration_from(c.at("standalone_warm_ns"), Duration::work);
  return k;
}

json op_to_json(const OpProfile& op) {
  json j = {{"index", op.index}, {"name", op.name}, {"kind", op.kind}};
  if (op.conv) j["conv"] = conv_to_json(*op.conv);
  if (op.conv_cublaslt) j["conv_cublaslt"] = conv_to_json(*op.conv_cublaslt);
  if (op.task_region) j["task_region"] = region_config_to_json(*op.task_region);
  if (!op.tasks.empty()) {
    json tasks = json::array();
    for (const TaskBenchmark& t : op.tasks) {
      json task = {{"ctas", t.ctas}, {"duration_ns", model::stats_to_json(t.duration_ns)}};
      if (t.startup_ns) task["startup_ns"] = model::stats_to_json(*t.startup_ns);
      tasks.push_back(std::move(task));
    }
    j["tasks"] = tasks;
  }
  if (op.tiles > 0) j["tiles"] = op.tiles;
  if (op.flagged_words) {
    j["flagged_words"] = {{"takes_x", op.flagged_words->takes_x},
                          {"gives_y", op.flagged_words->gives_y}};
  }
  return j;
}

OpProfile op_from(const Node& n, int sm_count) {
  OpProfile op;
  op.index = static_cast<int>(n.at("index").integer(0, kMaxInt));
  op.name = n.at("name").string();
  op.kind = n.at("kind").string();
  if (n.has("conv")) op.conv = conv_from(n.at("conv"));
  if (n.has("conv_cublaslt")) {
    op.conv_cublaslt = conv_from(n.at("conv_cublaslt"));
    if (op.conv_cublaslt->provider != "cublas") {
      n.at("conv_cublaslt").at("provider").fail("expected \"cublas\"");
    }
  }
  if (n.has("tasks")) {
    const std::vector<Node> tasks = n.at("tasks").list();
    if (tasks.empty()) n.at("tasks").fail("expected at least one CTA count (or leave it out)");
    for (const Node& t : tasks) {
      TaskBenchmark b;
      b.ctas = static_cast<int>(t.at("ctas").integer(1, sm_count));
      if (!op.tasks.empty() && b.ctas <= op.tasks.back().ctas) {
        t.at("ctas").fail("CTA counts must increase");
      }
      b.duration_ns = duration_from(t.at("duration_ns"), Duration::work);
      if (t.has("startup_ns")) b.startup_ns = duration_from(t.at("startup_ns"), Duration::gap);
      op.tasks.push_back(std::move(b));
    }
    op.task_region = region_config_from(n.at("task_region"));
  } else if (n.has("task_region")) {
    op.task_region = region_config_from(n.at("task_region"));
  }
  if (n.has("tiles")) op.tiles = n.at("tiles").integer(1, kMaxInt);
  if (n.has("flagged_words")) {
    const Node f = n.at("flagged_words");
    op.flagged_words = FlaggedWordsSupport{f.at("takes_x").boolean(), f.at("gives_y").boolean()};
  }
  return op;
}

json launch_points_to_json(const std::vector<GraphLaunchPoint>& points) {
  json out = json::array();
  for (const GraphLaunchPoint& g : points) {
    json point = {{"nodes", g.nodes}, {"launch_ns", model::stats_to_json(g.launch_ns)}};
    if (g.span_ns) point["span_ns"] = model::stats_to_json(*g.span_ns);
    if (g.back_to_back_ns) point["back_to_back_ns"] = model::stats_to_json(*g.back_to_back_ns);
    out.push_back(std::move(point));
  }
  return out;
}

// Absent from profiles that predate it: empty.
std::vector<GraphLaunchPoint> launch_points_from(const Node& parent) {
  std::vector<GraphLaunchPoint> points;
  if (!parent.has("graph_launch_by_nodes")) return points;
  const Node list = parent.at("graph_launch_by_nodes");
  const std::vector<Node> items = list.list();
  if (items.empty()) list.fail("expected at least one node count (or leave it out)");
  for (const Node& g : items) {
    GraphLaunchPoint point;
    point.nodes = g.at("nodes").integer(1);
    if (!points.empty() && point.nodes <= points.back().nodes) {
      g.at("nodes").fail("node counts must increase");
    }
    point.launch_ns = duration_from(g.at("launch_ns"), Duration::gap);
    if (g.has("span_ns")) point.span_ns = duration_from(g.at("span_ns"), Duration::gap);
    if (g.has("back_to_back_ns"))
      point.back_to_back_ns = duration_from(g.at("back_to_back_ns"), Duration::gap);
    points.push_back(std::move(point));
  }
  return points;
}

json collectives_to_json(const std::vector<CollectiveBenchmark>& collectives) {
  json out = json::array();
  for (const CollectiveBenchmark& c : collectives) {
    json points = json::array();
    for (const CollectivePoint& point : c.points) {
      points.push_back({{"bytes", point.bytes}, {"time_ns", model::stats_to_json(point.time_ns)}});
    }
    out.push_back({{"kind", c.kind}, {"points", points}});
  }
  return out;
}

// micro.collectives: only in a tensor-parallel profile (tp > 1), each kind once.
std::vector<CollectiveBenchmark> collectives_from(const Node& micro, int64_t tp) {
  std::vector<CollectiveBenchmark> out;
  if (!micro.has("collectives")) return out;
  const Node list = micro.at("collectives");
  if (tp == 1) {
    list.fail(
        "collectives are benchmarks of a tensor-parallel profile, and this one is of one "
        "GPU (no \"tp\" above 1)");
  }
  for (const Node& c : list.list()) {
    CollectiveBenchmark b;
    b.kind = c.at("kind").string();
    if (b.kind != "all-reduce" && b.kind != "all-gather") {
      c.at("kind").fail("expected \"all-reduce\" or \"all-gather\", got \"" + b.kind + "\"");
    }
    for (const CollectiveBenchmark& before : out) {
      if (before.kind == b.kind) c.at("kind").fail("\"" + b.kind + "\" given twice");
    }
    const Node points = c.at("points");
    const std::vector<Node> items = points.list();
    if (items.empty()) points.fail("expected at least one message size");
    for (const Node& item : items) {
      CollectivePoint point;
      point.bytes = item.at("bytes").integer(1, int64_t{1} << 40);
      if (!b.points.empty() && point.bytes <= b.points.back().bytes) {
        item.at("bytes").fail("message sizes must increase");
      }
      point.time_ns = duration_from(item.at("time_ns"), Duration::work);
      b.points.push_back(std::move(point));
    }
    out.push_back(std::move(b));
  }
  return out;
}

json stats_or_null(const std::optional<LatencyStats>& s) {
  return s ? model::stats_to_json(*s) : json(nullptr);
}

}  // namespace

const CollectiveBenchmark* MicroBenchmarks::collective(std::string_view kind) const {
  const std::string_view timed = kind == "all-reduce-residual" ? "all-reduce" : kind;
  for (const CollectiveBenchmark& c : collectives) {
    if (c.kind == timed) return &c;
  }
  return nullptr;
}

const OpProfile* StageProfile::op(int index) const {
  const auto it = std::lower_bound(ops.begin(), ops.end(), index,
                                   [](const OpProfile& op, int i) { return op.index < i; });
  return it != ops.end() && it->index == index ? &*it : nullptr;
}

const StageProfile* BatchProfile::stage(std::string_view name) const {
  for (const StageProfile& s : stages) {
    if (s.stage == name) return &s;
  }
  return nullptr;
}

const BatchProfile* Profile::batch(int64_t b) const {
  for (const BatchProfile& p : batches) {
    if (p.batch == b) return &p;
  }
  return nullptr;
}

std::vector<int64_t> Profile::batch_sizes() const {
  std::vector<int64_t> sizes;
  for (const BatchProfile& p : batches) sizes.push_back(p.batch);
  return sizes;
}

void check_batch(const Profile& profile, int64_t batch, bool allow_interpolate) {
  if (profile.batch(batch) != nullptr) return;
  const std::vector<int64_t> measured = profile.batch_sizes();
  const std::string where = "profile " + profile.source + ": ";
  if (!allow_interpolate) {
    throw Error(where + "no measurements at batch " + std::to_string(batch) +
                " (measured: " + model::comma_list(measured) +
                "); profile that batch, or allow interpolation (--allow-interpolate)");
  }
  if (measured.empty() || batch < measured.front() || batch > measured.back()) {
    throw Error(where + "batch " + std::to_string(batch) + " is outside the measured batches (" +
                model::comma_list(measured) + "); interpolation does not extrapolate");
  }
}

void check_tp(const Profile& profile, int64_t tp) {
  if (tp == profile.tp) return;
  throw Error("--tp: " + std::to_string(tp) + ", but profile " + profile.source + " holds " +
              model::gpu_count_text(profile.tp) + " (tensor-parallel degree " +
              std::to_string(profile.tp) + "); a prediction for " + model::gpu_count_text(tp) +
              " needs a profile made at that degree");
}

bool Profile::same_content(const Profile& other) const {
  return profile_to_json(*this) == profile_to_json(other);
}

json profile_to_json(const Profile& p) {
  const MicroBenchmarks& m = p.micro;
  json micro = {{"graph_launch_ns", model::stats_to_json(m.graph_launch_ns)},
                {"kernel_gap_ns", model::stats_to_json(m.kernel_gap_ns)},
                {"kernel_gap_pdl_ns", model::stats_to_json(m.kernel_gap_pdl_ns)},
                {"region_launch_ns", model::stats_to_json(m.region_launch_ns)},
                {"region_drain_ns", model::stats_to_json(m.region_drain_ns)},
                {"counter_signal_to_wait_ns", model::stats_to_json(m.counter_signal_to_wait_ns)}};
  if (m.dependency_check_round_ns) {
    micro["dependency_check_round_ns"] = model::stats_to_json(*m.dependency_check_round_ns);
  }
  if (m.flagged_word_hop_ns) {
    micro["flagged_word_hop_ns"] = model::stats_to_json(*m.flagged_word_hop_ns);
  }
  if (m.dependent_launch_ns) {
    micro["dependent_launch_ns"] = model::stats_to_json(*m.dependent_launch_ns);
  }
  if (!m.graph_launch_by_nodes.empty()) {
    micro["graph_launch_by_nodes"] = launch_points_to_json(m.graph_launch_by_nodes);
  }
  if (!m.collectives.empty()) micro["collectives"] = collectives_to_json(m.collectives);
  json batches = json::array();
  for (const BatchProfile& b : p.batches) {
    json stages = json::array();
    for (const StageProfile& s : b.stages) {
      json ops = json::array();
      for (const OpProfile& op : s.ops) ops.push_back(op_to_json(op));
      stages.push_back({{"stage", s.stage}, {"graph_ns", stats_or_null(s.graph_ns)}, {"ops", ops}});
    }
    json batch = {{"batch", b.batch}, {"stages", stages}};
    if (!b.graph_launch_by_nodes.empty()) {
      batch["graph_launch_by_nodes"] = launch_points_to_json(b.graph_launch_by_nodes);
    }
    batches.push_back(std::move(batch));
  }
  json doc = {{"schema", kProfileSchema},
              {"model", {{"name", p.model_name}, {"config", p.model_config}}},
              {"prompt_len", p.prompt_len},
              {"device",
               {{"name", p.device.name},
                {"sm_count", p.device.sm_count},
                {"l2_bytes", p.device.l2_bytes},
                {"registers_per_sm", p.device.registers_per_sm},
                {"copy_bandwidth_gb_per_s", p.device.copy_bandwidth_gb_per_s}}},
              {"micro", micro},
              {"batches", batches}};
  if (const std::optional<SmLimits>& l = p.device.sm_limits) {
    doc["device"]["sm_limits"] = {{"threads", l->threads},
                                  {"ctas", l->ctas},
                                  {"smem_bytes", l->smem_bytes},
                                  {"reserved_smem_per_cta_bytes", l->reserved_smem_per_cta_bytes}};
  }
  if (p.frames > 0) doc["frames"] = p.frames;
  if (p.tp > 1) doc["tp"] = p.tp;
  return doc;
}

Profile profile_from_json(const json& json_doc, std::string_view file_view) {
  const std::string file(file_view);
  const Node root(json_doc, "", file);
  if (!json_doc.is_object()) throw_field_error(file, "(top level)", "expected a JSON object");
  const std::string schema = root.at("schema").string();
  if (schema != kProfileSchema) {
    root.at("schema").fail("expected \"" + std::string(kProfileSchema) + "\", got \"" + schema +
                           "\"");
  }
  Profile p;
  p.source = file;
  const Node model = root.at("model");
  p.model_name = model.at("name").string();
  p.model_config = model.at("config").value();
  model.at("config").object();
  // The config must describe a model the builders know; check it now rather than at use.
  const model::ModelSpec spec =
      model::parse_model(p.model_config, p.model_name, file + " (model.config)");
  // The scenario is checked here, naming the field: later, make_scenario would blame the
  // command-line flags (--prompt-len, --frames, --batch) a user of the profile never gave.
  p.prompt_len = root.at("prompt_len").integer(1, spec.decoder.max_position);
  if (const std::optional<Node> frames = root.optional("frames")) {
    p.frames = frames->integer(0, model::kMaxFrames);
    if (p.frames > 0 && !spec.tts)
      frames->fail("a frame count, but the model is not a TTS pipeline");
  }
  if (const std::optional<Node> tp = root.optional("tp")) {
    p.tp = tp->integer(1, model::kMaxTp);
    if (std::string problem = model::tensor_parallel_problem(spec, p.tp); !problem.empty()) {
      tp->fail(problem);
    }
  }
  // Compared before they are added, as in make_scenario.
  const int64_t decoded = model::cache_positions(spec, 0, p.frames);
  if (p.prompt_len > spec.decoder.max_position - decoded) {
    root.at("prompt_len")
        .fail(std::to_string(p.prompt_len) + " plus " + std::to_string(decoded) +
              (spec.tts ? " decoded frames" : " decoded token") +
              " exceeds model.config max_position_embeddings " +
              std::to_string(spec.decoder.max_position));
  }
  const int64_t positions = p.prompt_len + decoded;

  const Node device = root.at("device");
  p.device.name = device.at("name").string();
  p.device.sm_count = static_cast<int>(device.at("sm_count").integer(1, 1 << 16));
  p.device.l2_bytes = device.at("l2_bytes").integer(0);
  p.device.registers_per_sm = device.at("registers_per_sm").integer(1);
  p.device.copy_bandwidth_gb_per_s = device.at("copy_bandwidth_gb_per_s").positive_number();
  // Bytes over this bandwidth are times: a bandwidth near 0 makes every transfer endless.
  if (p.device.copy_bandwidth_gb_per_s < 1e-3 || p.device.copy_bandwidth_gb_per_s > 1e6) {
    device.at("copy_bandwidth_gb_per_s")
        .fail("expected a bandwidth in [0.001, 1000000] GB/s, got " +
              json(p.device.copy_bandwidth_gb_per_s).dump());
  }

  if (const std::optional<Node> limits = device.optional("sm_limits")) {
    SmLimits& l = p.device.sm_limits.emplace();
    l.threads = static_cast<int>(limits->at("threads").integer(1, 1 << 20));
    l.ctas = static_cast<int>(limits->at("ctas").integer(1, 1 << 20));
    l.smem_bytes = limits->at("smem_bytes").integer(0, int64_t{1} << 40);
    l.reserved_smem_per_cta_bytes =
        limits->at("reserved_smem_per_cta_bytes").integer(0, l.smem_bytes);
  }

  const Node micro = root.at("micro");
  MicroBenchmarks& m = p.micro;
  m.graph_launch_ns = duration_from(micro.at("graph_launch_ns"), Duration::gap);
  m.kernel_gap_ns = duration_from(micro.at("kernel_gap_ns"), Duration::gap);
  m.kernel_gap_pdl_ns = duration_from(micro.at("kernel_gap_pdl_ns"), Duration::gap);
  m.region_launch_ns = duration_from(micro.at("region_launch_ns"), Duration::gap);
  m.region_drain_ns = duration_from(micro.at("region_drain_ns"), Duration::gap);
  m.counter_signal_to_wait_ns = duration_from(micro.at("counter_signal_to_wait_ns"), Duration::gap);
  if (micro.has("dependency_check_round_ns")) {
    m.dependency_check_round_ns =
        duration_from(micro.at("dependency_check_round_ns"), Duration::gap);
  }
  if (micro.has("flagged_word_hop_ns")) {
    m.flagged_word_hop_ns = duration_from(micro.at("flagged_word_hop_ns"), Duration::gap);
  }
  if (micro.has("dependent_launch_ns")) {
    m.dependent_launch_ns = duration_from(micro.at("dependent_launch_ns"), Duration::gap);
  }
  m.graph_launch_by_nodes = launch_points_from(micro);
  m.collectives = collectives_from(micro, p.tp);

  for (const Node& b : root.at("batches").list()) {
    BatchProfile batch;
    batch.batch = b.at("batch").integer(1, model::kMaxBatch);
    if (!p.batches.empty() && batch.batch <= p.batches.back().batch) {
      b.at("batch").fail("batch sizes must increase");
    }
    if (positions > model::kMaxTokens / batch.batch) {
      b.at("batch").fail(std::to_string(batch.batch) + " sequences of " +
                         std::to_string(positions) +
                         " positions (prompt and decoded) are more tokens than megacut models (" +
                         std::to_string(model::kMaxTokens) + ")");
    }
    for (const Node& s : b.at("stages").list()) {
      StageProfile stage;
      stage.stage = s.at("stage").string();
      if (batch.stage(stage.stage) != nullptr) s.at("stage").fail("stage given twice");
      if (s.has("graph_ns")) stage.graph_ns = duration_from(s.at("graph_ns"), Duration::gap);
      const std::vector<Node> ops = s.at("ops").list();
      for (size_t i = 0; i < ops.size(); ++i) {
        OpProfile op = op_from(ops[i], p.device.sm_count);
        if (!stage.ops.empty() && op.index <= stage.ops.back().index) {
          ops[i].at("index").fail("op indices must increase");
        }
        stage.ops.push_back(std::move(op));
      }
      batch.stages.push_back(std::move(stage));
    }
    batch.graph_launch_by_nodes = launch_points_from(b);
    p.batches.push_back(std::move(batch));
  }
  return p;
}

Profile read_profile(const std::filesystem::path& path) {
  const json doc = model::read_json_file(path);
  return profile_from_json(doc, path.string());
}

// Compact: a profile of six batch sizes holds some 10^5 numbers, and indenting them doubles the
// file.
void write_profile(const Profile& profile, const std::filesystem::path& path) {
  model::write_text_file(path, profile_to_json(profile).dump() + "\n");
}

}  // namespace megacut::model
