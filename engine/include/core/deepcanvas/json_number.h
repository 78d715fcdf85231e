#pragma once
// Checked conversions of the numbers in JSON files the tool reads back
// (projects, sweep state, the GPU catalog, the benchmark cache, metrics
// logs). nlohmann converts unchecked: get<int>() of 1e30 or of 2^40 is
// undefined behaviour (in Release a silently wrong figure), get<int64_t>()
// of an integer above INT64_MAX wraps to a negative number, and 1e400
// parses as inf. Every such number goes through one of these instead.
//
// Each throws IoError "FIELD: must be ..., got VALUE" when the value is not
// a number, is not a whole number where one is needed (2.5, and also 3.0:
// the files we write hold whole numbers as JSON integers), lies outside
// [lo, hi], or is not finite. FIELD is what the caller passes: the file
// and the path in it ("p.sweep.json: trials[3].id"), so the message says
// what to fix.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <limits>
#include <string>

namespace dc {

int64_t json_int(const nlohmann::json& v, const std::string& field, int64_t lo, int64_t hi);

// An int field: [lo, hi] within int's range.
int json_int32(const nlohmann::json& v, const std::string& field,
               int lo = std::numeric_limits<int>::min(), int hi = std::numeric_limits<int>::max());

// A whole number in [0, UINT64_MAX] (seeds, which use all 64 bits).
uint64_t json_uint64(const nlohmann::json& v, const std::string& field);

// A finite number in [lo, hi]; integers are numbers too.
double json_double(const nlohmann::json& v, const std::string& field, double lo, double hi);

// "" when v is a finite number in [lo, hi], else the message json_double
// would throw without the field: for readers that skip a bad record and
// warn rather than refuse the whole file (a metrics log being written).
std::string json_double_problem(const nlohmann::json& v, double lo, double hi);
std::string json_int_problem(const nlohmann::json& v, int64_t lo, int64_t hi);

}  // namespace dc
