#include "interrupt.h"

#include <atomic>
#include <csignal>
#include <filesystem>

#include <unistd.h>

namespace dc::cli {

namespace {

std::atomic<int> g_signal{0};
struct sigaction g_old_int, g_old_term;

extern "C" void on_signal(int sig) {
  // Only async-signal-safe calls here: write(2) and _exit(2).
  if (g_signal.exchange(sig) != 0) {
    const char msg[] = "\ndeepcanvas-cli: interrupted again; exiting without saving\n";
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(kInterruptedExit);
  }
  const char msg[] =
      "\ndeepcanvas-cli: stopping at the next step to save the model (press Ctrl-C again to quit "
      "at once)\n";
  ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART: the trainer's condition-variable waits and file writes must
  // not fail with EINTR because of the first signal.
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

bool InterruptGuard::requested() const {
  return g_signal.load() != 0;
}

std::string InterruptGuard::signal_name() const {
  return g_signal.load() == SIGTERM ? "SIGTERM" : "SIGINT";
}

std::string interrupted_checkpoint_path(const std::string& checkpoint_dir,
                                        const std::string& checkpoint) {
  namespace fs = std::filesystem;
  fs::path dir = !checkpoint_dir.empty() ? fs::path(checkpoint_dir)
                 : !checkpoint.empty()   ? fs::path(checkpoint).parent_path()
                                         : fs::path();
  return (dir / "interrupted.safetensors").string();
}

}  // namespace dc::cli
