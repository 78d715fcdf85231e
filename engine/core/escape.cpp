#include <deepcanvas/errors.h>
#include <deepcanvas/escape.h>
#include <deepcanvas/utf8.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace dc::escape {
namespace {

// Characters every target shows as themselves on one line: not a control,
// not a line or paragraph separator (YAML 1.1 breaks lines at U+0085,
// U+2028, U+2029), not an invisible format or bidi control (text that reads
// otherwise than it runs), not a noncharacter.
bool plain(int32_t cp) {
  if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) return false;
  if (cp == 0xad || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) ||
      (cp >= 0x2060 && cp <= 0x206f) || cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb))
    return false;
  if ((cp & 0xfffe) == 0xfffe || (cp >= 0xfdd0 && cp <= 0xfdef)) return false;
  return true;
}

std::string hex(uint32_t v, int digits) {
  char buf[12];
  std::snprintf(buf, sizeof buf, "%0*X", digits, v);
  return buf;
}

// \xHH, \uXXXX or \UXXXXXXXX: Python's and YAML's spelling of a code point.
std::string code_escape(int32_t cp) {
  if (cp < 0x100) return "\\x" + hex(uint32_t(cp), 2);
  if (cp < 0x10000) return "\\u" + hex(uint32_t(cp), 4);
  return "\\U" + hex(uint32_t(cp), 8);
}

std::string short_escape(int32_t cp) {
  switch (cp) {
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      return code_escape(cp);
  }
}

// The body of a double-quoted string in Python or YAML: both read \\, \",
// \n, \r, \t, \xHH, \uXXXX and \UXXXXXXXX alike.
std::string quoted_body(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const int32_t cp = next_code_point(s, i);
    if (cp == '\\' || cp == '"')
      out += '\\' + std::string(1, char(cp));
    else if (cp == kInvalidUtf8)
      out += "\\uFFFD";
    else if (!plain(cp))
      out += short_escape(cp);
    else
      out.append(s, at, i - at);
  }
  return out;
}

}  // namespace

std::string py_str(const std::string& s) {
  return '"' + quoted_body(s) + '"';
}

std::string py_text(const std::string& s) {
  return quoted_body(s);
}

std::string py_literal(const nlohmann::json& j, int indent) {
  const std::string pad(size_t(indent), ' ');
  switch (j.type()) {
    case nlohmann::json::value_t::object:
    case nlohmann::json::value_t::array: {
      const bool obj = j.is_object();
      if (j.empty()) return obj ? "{}" : "[]";
      std::string out = obj ? "{\n" : "[\n";
      for (auto it = j.begin(); it != j.end(); ++it) {
        out += pad + "    ";
        if (obj) out += py_str(it.key()) + ": ";
        out += py_literal(*it, indent + 4) + ",\n";
      }
      return out + pad + (obj ? "}" : "]");
    }
    case nlohmann::json::value_t::string:
      return py_str(j.get<std::string>());
    case nlohmann::json::value_t::boolean:
      return j.get<bool>() ? "True" : "False";
    case nlohmann::json::value_t::number_float:
      // JSON has no NaN or infinity; neither may reach Python as a name.
      return std::isfinite(j.get<double>()) ? j.dump() : "None";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return j.dump();
    default:
      return "None";
  }
}

std::string yaml_str(const std::string& s) {
  return '"' + quoted_body(s) + '"';
}

std::string line_text(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const int32_t cp = next_code_point(s, i);
    if (cp == kInvalidUtf8)
      out += "\\x" + hex(static_cast<unsigned char>(s[at]), 2);
    else if (!plain(cp))
      out += short_escape(cp);
    else
      out.append(s, at, i - at);
  }
  return out;
}

std::string md_text(const std::string& s) {
  std::string out;
  for (char c : line_text(s)) {
    if (c == '\\' || c == '`' || c == '<' || c == '>' || c == '[' || c == ']' || c == '|' ||
        c == '*' || c == '_')
      out += '\\';
    out += c;
  }
  return out;
}

std::string md_code(const std::string& s) {
  const std::string text = line_text(s);
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  // A span that starts or ends with a backtick needs a space inside.
  const bool space = !text.empty() && (text.front() == '`' || text.back() == '`');
  return fence + (space ? " " : "") + text + (space ? " " : "") + fence;
}

std::string sh_word(const std::string& s) {
  const auto safe = [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '.' || c == '/' || c == ':' || c == '=' ||
           c == '@' || c == '%' || c == '+' || c == ',' || c == '-';
  };
  bool bare = !s.empty(), printable = true;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    bare = bare && c < 0x80 && safe(c);
    const int32_t cp = next_code_point(s, i);
    printable = printable && cp != kInvalidUtf8 && plain(cp);
  }
  if (bare) return s;
  std::string out;
  if (printable) {
    out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  }
  // bash, zsh, ksh and POSIX.1-2024 sh read $'...'; every byte outside
  // printable ASCII is an escape, so the line shows no control character.
  out = "$'";
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '\\' || c == '\'')
      out += '\\' + std::string(1, ch);
    else if (c < 0x20 || c >= 0x7f)
      out += "\\x" + hex(c, 2);
    else
      out += ch;
  }
  return out + "'";
}

std::string k8s_name(const std::string& s, const std::string& what) {
  bool ok = !s.empty() && s.size() <= 63 && s.front() != '-' && s.back() != '-';
  for (char c : s) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
  if (!ok) throw Error(what + " '" + line_text(s) + "' is not a Kubernetes name (DNS-1123 label)");
  return s;
}

std::string decimal(const std::string& s, const std::string& what) {
  bool ok = !s.empty() && s.size() <= 18;
  for (char c : s) ok = ok && c >= '0' && c <= '9';
  if (!ok) throw Error(what + " '" + line_text(s) + "' is not a decimal number");
  return s;
}

std::string image_ref(const std::string& s, const std::string& what) {
  // Docker's reference grammar, loosely: [host[:port]/]path[:tag][@digest].
  // What matters here is that it is one word of that alphabet.
  bool ok = !s.empty() && s.size() <= 255 && std::isalnum(static_cast<unsigned char>(s[0]));
  for (char c : s)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
                c == '/' || c == ':' || c == '@');
  if (!ok)
    throw Error(what + " '" + line_text(s) +
                "' is not a container image reference (letters, digits and . _ - / : @, "
                "e.g. pytorch/pytorch:2.3.1-cuda12.1-cudnn8-runtime)");
  return s;
}

std::string apply(const std::string& context, const std::string& s, const std::string& what) {
  if (context == "py_str") return py_str(s);
  if (context == "py_text") return py_text(s);
  if (context == "py_literal") return py_literal(nlohmann::json::parse(s), 0);
  if (context == "yaml_str") return yaml_str(s);
  if (context == "line") return line_text(s);
  if (context == "md_text") return md_text(s);
  if (context == "md_code") return md_code(s);
  if (context == "sh") return sh_word(s);
  if (context == "k8s_name") return k8s_name(s, what);
  if (context == "decimal") return decimal(s, what);
  if (context == "image") return image_ref(s, what);
  throw Error("internal: no escape named '" + context + "' (for " + what + ")");
}

}  // namespace dc::escape
