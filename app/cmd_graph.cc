// megacut graph: one stage's ops with their tiles, bytes and FLOPs, as a table, JSON or dot.
#include <cstdio>
#include <iostream>

#include "app/commands.h"
#include "app/format.h"
#include "model/batch_list.h"
#include "model/decoder.h"
#include "model/error.h"
#include "model/graph_io.h"
#include "model/output_file.h"
#include "model/scenario.h"

namespace megacut::app {
namespace {

struct GraphOptions {
  std::string model;
  std::string stage = "decode";
  std::string batch = "1";
  int64_t prompt_len = model::kDefaultPromptLen;
  int64_t frames = 0;
  int64_t tp = 1;
  std::string json_path;
  std::string dot_path;
};

void print_table(const model::ModelSpec& spec, const model::Graph& g, int64_t tp) {
  const std::string ranks =
      tp > 1 ? " · tensor parallel over " + std::to_string(tp) + " GPUs, one rank's graph" : "";
  std::printf("%s · stage %s · batch %lld%s · %d ops · %s tasks · %s tile edges\n\n",
              spec.name.c_str(), g.stage().c_str(), static_cast<long long>(g.batch()),
              ranks.c_str(), g.op_count(), format_count(g.task_count()).c_str(),
              format_count(model::tile_edge_count(g)).c_str());
  std::printf("%4s  %-30s %-19s %6s %11s %11s %11s %13s\n", "#", "op", "kind", "tiles", "tile",
              "read", "written", "FLOPs");
  for (const model::Op& op : g.ops()) {
    const model::TileCost c = g.op_cost(op.index);
    const std::string tile =
        std::to_string(op.tiling.tile_rows) + "x" + std::to_string(op.tiling.tile_cols);
    std::printf("%4d  %-30s %-19s %6lld %11s %11s %11s %13s\n", op.index, op.name.c_str(),
                std::string(op.kind->name()).c_str(), static_cast<long long>(op.tiling.count()),
                tile.c_str(), format_bytes(c.bytes_read).c_str(),
                format_bytes(c.bytes_written).c_str(), format_flops(c.flops).c_str());
  }
  const model::TileCost t = g.total_cost();
  std::printf("\ntotal: read %s, written %s, %s", format_bytes(t.bytes_read).c_str(),
              format_bytes(t.bytes_written).c_str(), format_flops(t.flops).c_str());
  if (tp > 1) std::printf(", %s sent to the other GPUs", format_bytes(t.link_bytes).c_str());
  std::printf("\n");
  std::printf("parameters: %s (%s in bf16)\n", format_count(g.parameter_count()).c_str(),
              format_bytes(g.parameter_bytes()).c_str());
}

}  // namespace

void add_graph_command(CLI::App& root) {
  auto opt = std::make_shared<GraphOptions>();
  CLI::App* cmd = root.add_subcommand("graph", "Print one stage's op graph with tiles and costs");
  cmd->add_option("--model,-m", opt->model, "Bundled model name, config.json, or checkpoint dir")
      ->required();
  cmd->add_option("--stage,-s", opt->stage,
                  "Stage to print (prefill, decode; TTS: code-predictor, codec or vocoder too)")
      ->capture_default_str();
  cmd->add_option("--batch,-b", opt->batch, "Batch size")->type_name("INT")->capture_default_str();
  cmd->add_option("--prompt-len,-p", opt->prompt_len, "Prompt length in tokens")
      ->capture_default_str();
  add_frames_option(cmd, opt->frames);
  cmd->add_option(
         "--tp", opt->tp,
         "Tensor-parallel degree: one rank's graph of the stage sliced over this many GPUs")
      ->capture_default_str();
  CLI::Option* json = cmd->add_option("--json", opt->json_path,
                                      "Print JSON instead of the table, or write it to a file")
                          ->expected(0, 1);
  cmd->add_option("--dot", opt->dot_path, "Write the op graph as Graphviz dot to a file");
  cmd->callback([opt, json] {
    const model::ModelSpec spec = model::load_model(opt->model);
    const model::Scenario scenario = model::make_scenario(spec, model::parse_batch(opt->batch),
                                                          opt->prompt_len, opt->frames, opt->tp);
    const model::Graph g = model::build_graph(spec, scenario, opt->stage);
    if (!opt->dot_path.empty()) model::write_text_file(opt->dot_path, model::graph_to_dot(g));
    if (json->count() > 0) {
      nlohmann::json doc = model::graph_to_json(g);
      doc["model"] = spec.name;
      doc["prompt_len"] = scenario.prompt_len;
      if (scenario.frames > 0) doc["frames"] = scenario.frames;
      if (scenario.tp > 1) doc["tp"] = scenario.tp;
      if (opt->json_path.empty()) {
        std::cout << doc.dump(2) << "\n";
        return;
      }
      model::write_text_file(opt->json_path, doc.dump(2) + "\n");
    }
    print_table(spec, g, scenario.tp);
  });
}

}  // namespace megacut::app
