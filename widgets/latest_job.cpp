#include "widgets/latest_job.h"

#include <exception>

namespace dc::widgets {

LatestJob::LatestJob(QObject* parent) : QObject(parent) {
  pool_.setMaxThreadCount(1);
}

LatestJob::~LatestJob() {
  pending_ = nullptr;
  pool_.waitForDone();
}

void LatestJob::request(Job job) {
  pending_ = std::move(job);
  if (!running_) startNext();
}

void LatestJob::startNext() {
  if (!pending_) return;
  running_ = true;
  Job job = std::move(pending_);
  pending_ = nullptr;
  pool_.start([this, job = std::move(job)] {
    std::function<void()> deliver;
    try {
      deliver = job();
    } catch (const std::exception&) {
      // The job reports its own errors through its result; anything else
      // (bad_alloc on a huge graph) leaves the last result shown.
    }
    QMetaObject::invokeMethod(
        this,
        [this, deliver = std::move(deliver)] {
          running_ = false;
          if (deliver) deliver();
          startNext();
        },
        Qt::QueuedConnection);
  });
}

}  // namespace dc::widgets
