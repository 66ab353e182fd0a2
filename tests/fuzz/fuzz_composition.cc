// libFuzzer target: any text as a composition must parse and re-parse to the same composition
// from its canonical text, or fail with a megacut::Error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "model/composition.h"
#include "model/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace megacut::model;
  static const std::vector<StageShape> shapes = {{"prefill", 196}, {"decode", 57}};
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const Composition c = parse_composition(text, shapes);
    if (!(parse_composition(c.to_string(), shapes) == c)) std::abort();
    if (!(composition_from_json(composition_to_json(c), shapes, "fuzz") == c)) std::abort();
  } catch (const megacut::Error&) {
  }
  return 0;
}
