#pragma once
// Settings that are one of a few words in project files and on the command
// line ("adam", "bf16") are enums in memory: the word is turned into the
// enum once, when a project or a flag is read, and code compares enums.
// Each enum lists its words once, in an EnumNames specialisation beside it.
#include <array>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dc {

// Specialise with `static constexpr std::array<std::pair<E, const char*>, N> table`.
template <typename E>
struct EnumNames;

template <typename E>
const char* enum_name(E e) {
  for (const auto& [v, n] : EnumNames<E>::table)
    if (v == e) return n;
  return "?";
}

template <typename E>
std::optional<E> enum_from_name(std::string_view s) {
  for (const auto& [v, n] : EnumNames<E>::table)
    if (s == n) return v;
  return std::nullopt;
}

template <typename E>
std::vector<std::string> enum_names() {
  std::vector<std::string> out;
  for (const auto& [v, n] : EnumNames<E>::table) out.emplace_back(n);
  return out;
}

// Lets messages and test failures show "adam" rather than a number.
template <typename E>
requires requires {
  EnumNames<E>::table;
}
std::ostream& operator<<(std::ostream& os, E e) {
  return os << enum_name(e);
}

}  // namespace dc
