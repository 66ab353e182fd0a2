// The message of the megacut::Error a callable throws, for tests of error messages.
#pragma once

#include <string>

#include "model/error.h"

namespace megacut::testing {

// The message of the Error that f throws, or "" if it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace megacut::testing
