#include "model/error.h"

namespace megacut {

void throw_field_error(std::string_view file, std::string_view field, std::string_view what) {
  std::string message(file);
  message += ": field '";
  message += field;
  message += "': ";
  message += what;
  throw Error(message);
}

}  // namespace megacut
