// megacut models: the bundled model configs and their shapes.
#include <cstdio>

#include "app/commands.h"
#include "model/config.h"

namespace megacut::app {

void add_models_command(CLI::App& root) {
  CLI::App* cmd = root.add_subcommand("models", "List the bundled model configs");
  cmd->callback([] {
    std::printf("%-22s %-17s %7s %7s %10s %9s %8s  %s\n", "model", "arch", "hidden", "layers",
                "heads/kv", "head_dim", "vocab", "audio");
    for (const std::string& name : model::bundled_models()) {
      const model::ModelSpec m = model::load_model(name);
      const model::DecoderConfig& c = m.decoder;  // a TTS pipeline's talker
      const std::string heads = std::to_string(c.num_heads) + "/" + std::to_string(c.num_kv_heads);
      std::string arch = c.architecture;
      std::string audio = "-";
      if (m.tts) {
        arch = m.tts->model_type;
        audio = std::to_string(m.tts->sample_rate) + " Hz, " +
                std::to_string(m.tts->samples_per_frame) + " samples/frame, " +
                (m.tts->codec ? "code predictor " +
                                    std::to_string(m.tts->code_predictor->decoder.num_layers) +
                                    " layers x " + std::to_string(m.tts->code_predictor->steps()) +
                                    " steps, codec decoder"
                              : std::string("HiFi-GAN vocoder"));
      }
      std::printf("%-22s %-17s %7lld %7lld %10s %9lld %8lld  %s\n", name.c_str(), arch.c_str(),
                  static_cast<long long>(c.hidden_size), static_cast<long long>(c.num_layers),
                  heads.c_str(), static_cast<long long>(c.head_dim),
                  static_cast<long long>(c.vocab_size), audio.c_str());
    }
    std::printf("configs: %s\n", (model::configs_dir() / "models").c_str());
  });
}

}  // namespace megacut::app
