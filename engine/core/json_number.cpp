#include <deepcanvas/errors.h>
#include <deepcanvas/json_number.h>

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace dc {

namespace {

using json = nlohmann::json;

// The offending value as the message shows it: short (a file may hold a
// megabyte-long string there), and inf named, since nlohmann dumps it as
// null.
std::string shown(const json& v) {
  if (v.is_number_float() && !std::isfinite(v.get<double>()))
    return "a number too large for a double";
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

std::string bound(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

[[noreturn]] void refuse(const std::string& field, const std::string& why) {
  throw IoError(field + ": " + why);
}

}  // namespace

std::string json_int_problem(const json& v, int64_t lo, int64_t hi) {
  // nlohmann keeps integers above INT64_MAX as unsigned; read as int64 they
  // would wrap to negative numbers.
  const bool fits = v.is_number_integer() &&
                    (!v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(INT64_MAX));
  if (fits && v.get<int64_t>() >= lo && v.get<int64_t>() <= hi) return "";
  return "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
         shown(v);
}

std::string json_double_problem(const json& v, double lo, double hi) {
  if (v.is_number()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d >= lo && d <= hi) return "";
  }
  return "must be a finite number in [" + bound(lo) + ", " + bound(hi) + "], got " + shown(v);
}

int64_t json_int(const json& v, const std::string& field, int64_t lo, int64_t hi) {
  if (std::string why = json_int_problem(v, lo, hi); !why.empty()) refuse(field, why);
  return v.get<int64_t>();
}

int json_int32(const json& v, const std::string& field, int lo, int hi) {
  return int(json_int(v, field, lo, hi));
}

uint64_t json_uint64(const json& v, const std::string& field) {
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0))
    return v.get<uint64_t>();
  refuse(field, "must be an integer in [0, " + std::to_string(UINT64_MAX) + "], got " + shown(v));
}

double json_double(const json& v, const std::string& field, double lo, double hi) {
  if (std::string why = json_double_problem(v, lo, hi); !why.empty()) refuse(field, why);
  return v.get<double>();
}

}  // namespace dc
