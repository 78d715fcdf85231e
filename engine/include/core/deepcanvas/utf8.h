#pragma once
// One strict UTF-8 decoder for every reader of text (corpora, names in
// generated files): no overlong forms, no surrogates, nothing above U+10FFFF.
#include <cstdint>
#include <string>

namespace dc {

constexpr int32_t kInvalidUtf8 = -1;

// The code point starting at s[i]; i moves past it. An invalid byte gives
// kInvalidUtf8 and moves i by one, so every byte is seen once.
int32_t next_code_point(const std::string& s, size_t& i);

}  // namespace dc
