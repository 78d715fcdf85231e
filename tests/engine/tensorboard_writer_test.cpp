// TensorBoard event files (issue 35): the frames and their CRCs against an
// independent reader, a run's event file against its metrics.jsonl, a file
// cut mid-record, an unwritable folder, and TensorBoard's own reader.
#include "test_util.h"

#include <deepcanvas/data.h>
#include <deepcanvas/project.h>
#include <deepcanvas/run_log.h>
#include <deepcanvas/tensorboard_writer.h>
#include <deepcanvas/trainer.h>
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

namespace dc {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// CRC-32C bit by bit, apart from the writer's table.
uint32_t crc32c_bitwise(const std::string& s) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char ch : s) {
    crc ^= ch;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}
uint32_t masked(const std::string& s) {
  const uint32_t c = crc32c_bitwise(s);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}
template <typename T>
T le(const std::string& s, size_t at) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= T(uint8_t(s[at + i])) << (8 * i);
  return v;
}

// The frames of a file: whole records with good CRCs; a cut last record
// sets `truncated`; a bad CRC is a test failure.
struct Frames {
  std::vector<std::string> records;
  bool truncated = false;
};
Frames read_frames(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  Frames out;
  size_t at = 0;
  while (at < s.size()) {
    if (s.size() - at < 12) {
      out.truncated = true;
      break;
    }
    const uint64_t n = le<uint64_t>(s, at);
    EXPECT_EQ(le<uint32_t>(s, at + 8), masked(s.substr(at, 8))) << "length CRC at " << at;
    if (s.size() - at - 12 < n + 4) {
      out.truncated = true;
      break;
    }
    const std::string data = s.substr(at + 12, size_t(n));
    EXPECT_EQ(le<uint32_t>(s, at + 12 + size_t(n)), masked(data)) << "data CRC at " << at;
    out.records.push_back(data);
    at += 16 + size_t(n);
  }
  return out;
}

// A minimal protobuf reader: the fields of a message, by number.
struct Field {
  int wire = 0;
  uint64_t num = 0;   // varint, fixed64, fixed32
  std::string bytes;  // length-delimited
};
std::multimap<int, Field> fields(const std::string& m) {
  std::multimap<int, Field> out;
  size_t at = 0;
  auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0; at < m.size(); shift += 7) {
      const uint8_t b = uint8_t(m[at++]);
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  };
  while (at < m.size()) {
    const uint64_t k = varint();
    Field f;
    f.wire = int(k & 7);
    if (f.wire == 0) f.num = varint();
    if (f.wire == 1) f.num = le<uint64_t>(m, at), at += 8;
    if (f.wire == 5) f.num = le<uint32_t>(m, at), at += 4;
    if (f.wire == 2) {
      const size_t n = size_t(varint());
      f.bytes = m.substr(at, n);
      at += n;
    }
    out.emplace(int(k >> 3), f);
  }
  return out;
}

struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::vector<std::pair<std::string, float>> scalars;
  std::map<std::string, std::pair<std::string, std::string>> texts;  // tag: plugin, text
};
Event decode(const std::string& record) {
  Event e;
  for (const auto& [n, f] : fields(record)) {
    if (n == 1) std::memcpy(&e.wall_time, &f.num, 8);
    if (n == 2) e.step = int64_t(f.num);
    if (n == 3) e.file_version = f.bytes;
    if (n != 5) continue;
    for (const auto& [vn, v] : fields(f.bytes)) {
      EXPECT_EQ(vn, 1);
      std::string tag, plugin, text;
      bool scalar = false;
      float value = 0;
      for (const auto& [fn, x] : fields(v.bytes)) {
        if (fn == 1) tag = x.bytes;
        if (fn == 2) {
          const uint32_t bits = uint32_t(x.num);
          std::memcpy(&value, &bits, 4);
          scalar = true;
        }
        if (fn == 9)
          for (const auto& [mn, md] : fields(x.bytes))
            if (mn == 1) plugin = fields(md.bytes).find(1)->second.bytes;
        if (fn == 8)
          for (const auto& [tn, t] : fields(x.bytes))
            if (tn == 8) text = t.bytes;
      }
      if (scalar)
        e.scalars.emplace_back(tag, value);
      else
        e.texts[tag] = {plugin, text};
    }
  }
  return e;
}

std::vector<Event> read_events(const std::string& path, bool* truncated = nullptr) {
  Frames f = read_frames(path);
  if (truncated) *truncated = f.truncated;
  std::vector<Event> out;
  for (const std::string& r : f.records) out.push_back(decode(r));
  return out;
}

std::vector<std::string> event_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0)
      out.push_back(e.path().string());
  return out;
}

TEST(TensorBoardWriter, Crc32cMatchesTheBitwiseOneAndTheStandardCheck) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);  // RFC 3720's check value
  EXPECT_EQ(crc32c_bitwise("123456789"), 0xE3069283u);
  std::string s;
  for (int i = 0; i < 1000; ++i) {
    s.push_back(char(i * 37 + 11));
    ASSERT_EQ(crc32c(s.data(), s.size()), crc32c_bitwise(s)) << i;
    ASSERT_EQ(tfrecord_masked_crc(s.data(), s.size()), masked(s)) << i;
  }
}

TEST(TensorBoardWriter, WritesFramedEventsThatDecodeToWhatWasWritten) {
  test::TmpDir dir;
  std::string path;
  {
    TensorBoardWriter w(dir.dir.string());
    ASSERT_TRUE(w.ok()) << w.problem();
    path = w.path();
    w.add_scalars({{"step/loss", 2.302585}, {"step/lr", 1e-3}}, 1);
    w.add_scalars({{"step/loss", 1.5}}, 2);
    w.add_text("settings", "epochs: 3", 0);
  }
  EXPECT_NE(fs::path(path).filename().string().find("events.out.tfevents."), std::string::npos);
  bool truncated = true;
  const std::vector<Event> ev = read_events(path, &truncated);
  EXPECT_FALSE(truncated);
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].file_version, "brain.Event:2");
  EXPECT_GT(ev[0].wall_time, 1.6e9);
  EXPECT_EQ(ev[1].step, 1);
  ASSERT_EQ(ev[1].scalars.size(), 2u);
  EXPECT_EQ(ev[1].scalars[0].first, "step/loss");
  EXPECT_EQ(ev[1].scalars[0].second, 2.302585f);
  EXPECT_EQ(ev[1].scalars[1].second, 1e-3f);
  EXPECT_EQ(ev[2].step, 2);
  EXPECT_EQ(ev[2].scalars.at(0).second, 1.5f);
  EXPECT_EQ(ev[3].texts.at("settings"),
            std::make_pair(std::string("text"), std::string("epochs: 3")));
}

// A process killed mid-write leaves a cut last frame: every record before
// it still reads with good CRCs.
TEST(TensorBoardWriter, ATruncatedLastRecordLeavesTheCompleteOnes) {
  test::TmpDir dir;
  std::string path;
  {
    TensorBoardWriter w(dir.dir.string());
    path = w.path();
    for (int i = 1; i <= 5; ++i) w.add_scalars({{"step/loss", 1.0 / i}}, i);
  }
  const auto full = fs::file_size(path);
  for (uintmax_t cut : {uintmax_t(1), uintmax_t(5), uintmax_t(14)}) {
    fs::path copy = dir.dir / ("cut" + std::to_string(cut));
    fs::copy_file(path, copy);
    fs::resize_file(copy, full - cut);
    bool truncated = false;
    const std::vector<Event> ev = read_events(copy.string(), &truncated);
    EXPECT_TRUE(truncated) << cut;
    ASSERT_EQ(ev.size(), 5u) << cut;  // the version record and steps 1-4
    EXPECT_EQ(ev[4].step, 4);
    EXPECT_EQ(ev[4].scalars.at(0).second, 0.25f);
  }
}

// A file that cannot grow (as on a full disk; here RLIMIT_FSIZE): the
// failure is said, later writes are skipped, and what was written reads up
// to the cut frame.
TEST(TensorBoardWriter, AFileThatCannotGrowIsSaidAndStaysReadable) {
  test::TmpDir dir;
  std::string path, problem;
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  {
    TensorBoardWriter w(dir.dir.string());
    path = w.path();
    struct rlimit small = old;
    small.rlim_cur = 300;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    for (int i = 1; i <= 40; ++i) w.add_scalars({{"step/loss", 1.0 / i}}, i);
    ::setrlimit(RLIMIT_FSIZE, &old);
    problem = w.problem();
    EXPECT_FALSE(w.ok());
  }
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(problem.find(path), std::string::npos) << problem;
  EXPECT_NE(problem.find("training goes on"), std::string::npos) << problem;
  EXPECT_EQ(fs::file_size(path), 300u);
  const std::vector<Event> ev = read_events(path);
  ASSERT_GE(ev.size(), 3u);
  for (size_t i = 1; i < ev.size(); ++i) EXPECT_EQ(ev[i].step, int64_t(i));
}

// GPU telemetry (4 Hz) goes in at most once per step, at the last step seen,
// and reads back.
TEST(TensorBoardWriter, TelemetryIsRecordedOncePerStep) {
  test::TmpDir dir;
  {
    RunRecorder rec({dir.dir.string(), true, "p", ""});
    TrainEvent e;
    e.kind = TrainEvent::Kind::Started;
    e.epochs = 1;
    rec.add(e);
    auto telemetry = [&](int util) {
      TrainEvent t;
      t.kind = TrainEvent::Kind::Telemetry;
      t.gpu.utilization_pct = util;
      t.gpu.memory_used = int64_t(512) << 20;
      t.device_allocated = int64_t(100) << 20;
      rec.add(t);
    };
    for (int64_t step = 1; step <= 2; ++step) {
      TrainEvent s;
      s.kind = TrainEvent::Kind::Step;
      s.step = step;
      s.loss = 1.0 / double(step);
      rec.add(s);
      telemetry(int(step) * 10);
      telemetry(99);  // the same step: left out
    }
    EXPECT_TRUE(rec.take_problem().empty());
  }
  std::map<std::pair<std::string, int64_t>, float> got;
  for (const Event& e : read_events(event_files(dir.dir).at(0)))
    for (const auto& [tag, v] : e.scalars) got[{tag, e.step}] = v;
  EXPECT_EQ(got.at({"gpu/utilization_pct", 1}), 10.0f);
  EXPECT_EQ(got.at({"gpu/utilization_pct", 2}), 20.0f);
  EXPECT_EQ(got.at({"gpu/memory_used_mib", 2}), 512.0f);
  EXPECT_EQ(got.at({"gpu/allocated_mib", 1}), 100.0f);
  RunLogReader r((dir.dir / "metrics.jsonl").string());
  int telemetry = 0;
  for (const TrainEvent& e : r.poll(true))
    if (e.kind == TrainEvent::Kind::Telemetry) {
      ++telemetry;
      EXPECT_EQ(e.gpu.memory_used, int64_t(512) << 20);
    }
  EXPECT_EQ(telemetry, 2);
  EXPECT_TRUE(r.warnings().empty()) << r.warnings().front();
}

std::shared_ptr<Dataset> toy(int64_t n, uint64_t seed) {
  return std::make_shared<Dataset>(test::quadrant_toy(n, seed));
}

// Runs a trainer to its end, handing every event to the recorder.
std::vector<TrainEvent> run_recorded(Trainer& t, RunRecorder& rec, std::vector<std::string>& said) {
  std::vector<TrainEvent> ev;
  t.start();
  for (;;) {
    auto e = t.events().pop(std::chrono::milliseconds(30000));
    if (!e) {
      ADD_FAILURE() << "no event for 30 s";
      break;
    }
    rec.add(*e);
    const std::string p = rec.take_problem();
    if (!p.empty()) said.push_back(p);
    ev.push_back(*e);
    if (e->kind == TrainEvent::Kind::Finished || e->kind == TrainEvent::Kind::Failed ||
        e->kind == TrainEvent::Kind::Cancelled)
      break;
  }
  t.wait();
  return ev;
}

TEST(TensorBoardWriter, AnUnwritableFolderIsSaidOnceAndTrainingGoesOn) {
  test::TmpDir dir;
  std::ofstream(dir.dir / "a-file") << "not a folder";
  const std::string bad = (dir.dir / "a-file" / "run").string();
  TensorBoardWriter w(bad);
  EXPECT_FALSE(w.ok());
  EXPECT_NE(w.problem().find(bad), std::string::npos) << w.problem();
  EXPECT_NE(w.problem().find("training goes on"), std::string::npos) << w.problem();
  w.add_scalars({{"x", 1}}, 1);  // a no-op, not a crash

  TrainConfig c;
  c.epochs = 2;
  c.batch = 32;
  c.threads = 2;
  c.optimizer.lr = 0.01;
  Trainer t(test::quadrant_mlp(false), c, toy(256, 1), toy(64, 2));
  RunRecorder rec({bad, true, "toy", "epochs: 2"});
  std::vector<std::string> said;
  const std::vector<TrainEvent> ev = run_recorded(t, rec, said);
  EXPECT_EQ(ev.back().kind, TrainEvent::Kind::Finished) << ev.back().message;
  EXPECT_EQ(t.result().epochs_run, 2);
  ASSERT_EQ(said.size(), 1u);  // one message for both files, once
  EXPECT_NE(said[0].find("metrics.jsonl"), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("TensorBoard"), std::string::npos) << said[0];
  EXPECT_TRUE(rec.event_file().empty());
}

// A short run on the bundled Fashion-MNIST subset into `dir`.
void sample_run(const fs::path& dir, bool tensorboard = true) {
  register_builtin_layers();
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  TrainTest tt =
      load_fashion_mnist(std::string(DC_SOURCE_DIR) + "/sample_data/fashion-mnist-subset");
  TrainConfig c = p.training;
  c.epochs = 2;
  c.threads = 2;
  c.steps_per_epoch_limit = 6;
  c.device = DeviceSpec{};
  Trainer t(p.graph, c, std::make_shared<Dataset>(std::move(tt.train)),
            std::make_shared<Dataset>(std::move(tt.test)));
  RunRecorder rec({dir.string(), tensorboard, p.name, "```\n{\"epochs\": 2}\n```"});
  std::vector<std::string> said;
  const std::vector<TrainEvent> ev = run_recorded(t, rec, said);
  ASSERT_EQ(ev.back().kind, TrainEvent::Kind::Finished) << ev.back().message;
  EXPECT_TRUE(said.empty()) << said.front();
}

TEST(TensorBoardWriter, ARunsEventFileHoldsEveryFigureOfItsMetricsJsonl) {
  test::TmpDir dir;
  sample_run(dir.dir);
  const std::vector<std::string> files = event_files(dir.dir);
  ASSERT_EQ(files.size(), 1u);
  std::map<std::pair<std::string, int64_t>, float> got;
  const std::vector<Event> ev = read_events(files[0]);
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev[0].file_version, "brain.Event:2");
  bool settings = false;
  for (const Event& e : ev) {
    for (const auto& [tag, v] : e.scalars)
      EXPECT_TRUE(got.emplace(std::pair(tag, e.step), v).second) << tag;
    if (e.texts.count("settings")) settings = e.texts.at("settings").first == "text";
  }
  EXPECT_TRUE(settings);

  std::ifstream f(dir.dir / "metrics.jsonl");
  std::string line;
  size_t figures = 0;
  std::map<std::string, int> kinds;
  while (std::getline(f, line)) {
    const json j = json::parse(line);
    const std::string kind = j.at("kind");
    ++kinds[kind];
    const std::string prefix = kind == "telemetry" ? "gpu" : kind;
    if (kind != "step" && kind != "epoch" && kind != "validation" && kind != "telemetry") continue;
    for (const auto& [k, v] : j.items()) {
      if (k == "kind" || k == "step" || k == "epoch" || k == "step_in_epoch" ||
          k == "steps_per_epoch" || k == "elapsed_s" || k == "best" || !v.is_number())
        continue;
      const auto key = std::pair(prefix + "/" + k, j.at("step").get<int64_t>());
      ASSERT_TRUE(got.count(key)) << key.first << " at " << key.second;
      EXPECT_EQ(got.at(key), float(v.get<double>())) << key.first << " at " << key.second;
      ++figures;
    }
  }
  EXPECT_EQ(figures, got.size());  // nothing in the event file that the log lacks
  EXPECT_EQ(kinds["start"], 1);
  EXPECT_EQ(kinds["step"], 12);
  EXPECT_EQ(kinds["epoch"], 2);
  EXPECT_EQ(kinds["end"], 1);
  EXPECT_TRUE(got.count({"epoch/test_accuracy", 12}));
  EXPECT_TRUE(got.count({"step/lr", 1}));

  // The app's reader reads the engine's log as it reads train.py's.
  RunLogReader r((dir.dir / "metrics.jsonl").string());
  const std::vector<TrainEvent> back = r.poll(true);
  EXPECT_TRUE(r.warnings().empty()) << r.warnings().front();
  EXPECT_TRUE(r.finished());
  EXPECT_EQ(back.size(), 16u);
}

TEST(TensorBoardWriter, OffMeansNoEventFileButStillAMetricsLog) {
  test::TmpDir dir;
  sample_run(dir.dir, false);
  EXPECT_TRUE(event_files(dir.dir).empty());
  EXPECT_TRUE(fs::exists(dir.dir / "metrics.jsonl"));
}

// TensorBoard's own reader (PyPI's tensorboard, in the environment
// installer/verify-venv.sh makes) on a run folder.
TEST(TensorBoardWriter, TensorBoardsEventAccumulatorReadsEveryScalar) {
  const char* env = std::getenv("DC_VERIFY_VENV");
  const std::string venv = env ? env : std::string(DC_SOURCE_DIR) + "/.venv-verify";
  const std::string python = venv + "/bin/python";
  if (!fs::exists(python) ||
      std::system((python + " -c 'import tensorboard' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "tensorboard is not installed in " << venv
                 << ": run installer/verify-venv.sh (downloads it from PyPI)";
  test::TmpDir dir;
  sample_run(dir.dir);
  const std::string cmd = python + " " + DC_SOURCE_DIR + "/tests/engine/tensorboard_check.py " +
                          dir.dir.string() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(::pclose(p), 0) << out;
  EXPECT_NE(out.find("scalars in the event file"), std::string::npos) << out;
}

}  // namespace
}  // namespace dc
