// Errors a user can cause: a bad config, a bad composition, a missing profile entry.
// Each message names where the problem is (file, field, value) so it can be fixed without a
// debugger. Our own invariants use assert instead.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace megacut {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "<file>: field '<field>': <what>", the form every input error takes.
[[noreturn]] void throw_field_error(std::string_view file, std::string_view field,
                                    std::string_view what);

}  // namespace megacut
