// The checked conversion of JSON numbers (json_number.h) at its edges, and
// the readers that go through it refusing out-of-range figures with the
// field named: the GPU catalog, the benchmark cache and a run's metrics log.
#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/advisor/gpu_catalog.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/json_number.h>
#include <deepcanvas/run_log.h>
#include <gtest/gtest.h>

#include "test_util.h"

#include <cfloat>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace dc {
namespace {

using json = nlohmann::json;

using test::error_of;

std::string int_error_of(const char* text, int64_t lo, int64_t hi) {
  return error_of([&] { json_int(json::parse(text), "f.json: a.b", lo, hi); });
}

TEST(JsonNumber, IntegersAtTheEdgesOfTheirRange) {
  EXPECT_EQ(json_int(json::parse("9223372036854775807"), "f", INT64_MIN, INT64_MAX), INT64_MAX);
  EXPECT_EQ(json_int(json::parse("-9223372036854775808"), "f", INT64_MIN, INT64_MAX), INT64_MIN);
  EXPECT_EQ(json_int32(json::parse("2147483647"), "f"), INT_MAX);
  EXPECT_EQ(json_int32(json::parse("-2147483648"), "f"), INT_MIN);
  EXPECT_EQ(json_int(json::parse("-0"), "f", 0, 0), 0);
  // 2^63 is held unsigned by nlohmann; read as int64 it would wrap to INT64_MIN.
  EXPECT_NE(int_error_of("9223372036854775808", INT64_MIN, INT64_MAX)
                .find("f.json: a.b: must be an integer in ["),
            std::string::npos);
  // 2^31 does not fit an int.
  const std::string e =
      error_of([] { json_int32(json::parse("2147483648"), "f.json: trials[0].id"); });
  EXPECT_NE(e.find("f.json: trials[0].id: must be an integer in [-2147483648, 2147483647], got "
                   "2147483648"),
            std::string::npos)
      << e;
  EXPECT_NE(int_error_of("-9223372036854775809", INT64_MIN, INT64_MAX).find("a.b"),
            std::string::npos);
  EXPECT_NE(int_error_of("11", 1, 10).find("[1, 10], got 11"), std::string::npos);
  EXPECT_NE(int_error_of("0", 1, 10).find("got 0"), std::string::npos);
}

TEST(JsonNumber, AnIntegerFieldRefusesFractionsAndOtherTypes) {
  EXPECT_NE(int_error_of("2.5", 0, 10).find("a.b: must be an integer in [0, 10], got 2.5"),
            std::string::npos);
  // Our files hold whole numbers as JSON integers; 3.0 and 1e30 are not.
  EXPECT_NE(int_error_of("3.0", 0, 10).find("got 3.0"), std::string::npos);
  EXPECT_NE(int_error_of("1e30", 0, INT_MAX).find("got 1e+30"), std::string::npos);
  EXPECT_NE(int_error_of("\"3\"", 0, 10).find("got \"3\""), std::string::npos);
  EXPECT_NE(int_error_of("true", 0, 10).find("got true"), std::string::npos);
  EXPECT_NE(int_error_of("null", 0, 10).find("got null"), std::string::npos);
  // A long value is shortened in the message.
  const std::string e = int_error_of(("\"" + std::string(1000, 'x') + "\"").c_str(), 0, 1);
  EXPECT_LT(e.size(), 120u) << e;
}

TEST(JsonNumber, Unsigned64BitIntegers) {
  EXPECT_EQ(json_uint64(json::parse("18446744073709551615"), "f"), UINT64_MAX);
  EXPECT_EQ(json_uint64(json::parse("0"), "f"), 0u);
  // One more is a float to nlohmann.
  for (const char* bad : {"18446744073709551616", "-1", "1.5", "\"1\""})
    EXPECT_NE(error_of([&] { json_uint64(json::parse(bad), "seed"); }).find("seed: must be"),
              std::string::npos)
        << bad;
}

TEST(JsonNumber, DoublesAreFiniteAndInRange) {
  EXPECT_EQ(json_double(json::parse("2.5"), "f", 0, 10), 2.5);
  EXPECT_EQ(json_double(json::parse("7"), "f", 0, 10), 7.0);  // integers are numbers
  EXPECT_TRUE(std::signbit(json_double(json::parse("-0.0"), "f", 0, 0)));
  EXPECT_EQ(json_double(json::parse("18446744073709551615"), "f", 0, 1e20), 18446744073709551615.0);
  std::string e = error_of([] { json_double(json::parse("1e300"), "g.json: x", 0, 1e6); });
  EXPECT_NE(e.find("g.json: x: must be a finite number in [0, 1e+06], got 1e+300"),
            std::string::npos)
      << e;
  EXPECT_NE(error_of([] { json_double(json::parse("\"fast\""), "x", 0, 1); }).find("\"fast\""),
            std::string::npos);
  // JSON has no NaN, and nlohmann 3.11 refuses 1e400 rather than reading
  // inf; an inf built in memory is refused and named as such.
  EXPECT_TRUE(json::parse("1e400", nullptr, false).is_discarded());
  e = error_of([] { json_double(json(INFINITY), "x", -DBL_MAX, DBL_MAX); });
  EXPECT_NE(e.find("too large"), std::string::npos) << e;
}

// ---- the readers -----------------------------------------------------------

const char* kRow =
    R"({"name": "G", "memory_gib": MEM, "bandwidth_gbs": 448, "fp32_tflops": FP32,
        "tdp_w": 200, "source": "s"})";

std::string catalog(const std::string& mem, const std::string& fp32) {
  std::string r = kRow;
  r.replace(r.find("MEM"), 3, mem);
  r.replace(r.find("FP32"), 4, fp32);
  return R"({"gpus": [)" + r + "]}";
}

TEST(JsonNumber, TheGpuCatalogRefusesFiguresOutsideItsRangesNamingTheField) {
  EXPECT_EQ(advisor::parse_gpu_catalog(catalog("80", "60"), "c.json")[0].memory_bytes, int64_t(80)
                                                                                           << 30);
  // 1e300 GiB once became an int64 of bytes unchecked.
  for (const char* mem : {"1e300", "1e7", "-1", "0"}) {
    const std::string e =
        error_of([&] { advisor::parse_gpu_catalog(catalog(mem, "60"), "c.json"); });
    EXPECT_NE(e.find("c.json: GPU row 1 ('G'): field 'memory_gib': must be a finite number"),
              std::string::npos)
        << e;
  }
  // A rate of almost nothing predicts epochs of 1e290 seconds.
  const std::string e = error_of([] { advisor::parse_gpu_catalog(catalog("8", "1e-300"), "c"); });
  EXPECT_NE(e.find("'fp32_tflops'"), std::string::npos) << e;
}

TEST(JsonNumber, AGpuCatalogThatNeverEndsIsReadOnlyUpToALimit) {
  test::ScratchXdg config("XDG_CONFIG_HOME");
  std::filesystem::create_directories(config.dir() / "DeepCanvas");
  std::filesystem::create_symlink("/dev/zero", config.dir() / "DeepCanvas" / "gpus.json");
  const std::string e = error_of([] { advisor::load_gpu_catalog(); });
  EXPECT_NE(e.find("larger than"), std::string::npos) << e;
  EXPECT_NE(e.find("GPU catalog"), std::string::npos) << e;
}

std::string bench(const std::string& threads, const std::string& gflops) {
  return R"({"device": "cpu", "name": "n", "threads": )" + threads + R"(, "fp32_gflops": )" +
         gflops + R"(, "conv_gflops": 1, "mem_bandwidth_gbs": 10, "step_overhead_s": 0.001})";
}

TEST(JsonNumber, TheBenchmarkCacheRefusesOutOfRangeFiguresNamingTheField) {
  EXPECT_EQ(advisor::bench_from_json(bench("8", "100")).threads, 8);
  std::string e = error_of([] { advisor::bench_from_json(bench("1e30", "100")); });
  EXPECT_NE(e.find("device benchmark.threads: must be an integer"), std::string::npos) << e;
  e = error_of([] { advisor::bench_from_json(bench("2147483648", "100")); });
  EXPECT_NE(e.find(".threads"), std::string::npos) << e;
  e = error_of([] { advisor::bench_from_json(bench("8", "-5")); });
  EXPECT_NE(e.find(".fp32_gflops: must be a finite number"), std::string::npos) << e;
  // In the cache such an entry is measured again, as a missing one.
  test::ScratchXdg cache("XDG_CACHE_HOME");
  std::filesystem::create_directories(cache.dir() / "DeepCanvas");
  std::ofstream(advisor::bench_cache_path()) << R"({"k": )" << bench("1e30", "100") << "}";
  advisor::DeviceBench b;
  EXPECT_FALSE(advisor::load_cached_bench("k", b));
}

TEST(JsonNumber, AMetricsRecordWithAnOutOfRangeCountIsSkippedNamingTheField) {
  const test::TmpDir dir;
  const std::string path =
      dir.write("metrics.jsonl", R"({"kind": "start", "epochs": 2, "steps_per_epoch": 1e30})"
                                 "\n"
                                 R"({"kind": "step", "epoch": 1e30, "step": 1, "loss": 0.5})"
                                 "\n"
                                 R"({"kind": "epoch", "epoch": 1, "step": 1, "train_loss": 0.4})"
                                 "\n");
  RunLogReader r(path);
  const std::vector<TrainEvent> events = r.poll(true);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, TrainEvent::Kind::Epoch);
  ASSERT_EQ(r.warnings().size(), 2u);
  EXPECT_NE(r.warnings()[0].find("line 1: steps_per_epoch: must be an integer"), std::string::npos)
      << r.warnings()[0];
  EXPECT_NE(r.warnings()[1].find("line 2: epoch: must be an integer"), std::string::npos)
      << r.warnings()[1];
}

}  // namespace
}  // namespace dc
