#include "phx/kernels/thread_pool.h"

#include <sched.h>

#include <utility>

namespace phx::kernels {
namespace {
thread_local bool t_inside_region = false;
}

unsigned hardware_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

ThreadPool::ThreadPool(unsigned threads) {
  if (threads == 0) threads = hardware_threads();
  workers_.reserve(threads - 1);
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::drain(const std::function<void(size_t)>& task) {
  for (size_t i = next_task_.fetch_add(1); i < task_count_; i = next_task_.fetch_add(1)) {
    try {
      task(i);
    } catch (...) {
      next_task_.store(task_count_);  // the tasks not started yet never start
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void ThreadPool::worker_loop() {
  unsigned long seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    const auto* task = task_;
    if (task == nullptr) continue;  // woke after the region had already ended
    ++busy_workers_;
    lock.unlock();
    t_inside_region = true;
    drain(*task);
    t_inside_region = false;
    lock.lock();
    if (--busy_workers_ == 0) done_.notify_one();
  }
}

void ThreadPool::run(size_t tasks, const std::function<void(size_t)>& task) {
  std::unique_lock<std::mutex> region(region_mutex_, std::defer_lock);
  if (tasks <= 1 || workers_.empty() || t_inside_region || !region.try_lock()) {
    for (size_t i = 0; i < tasks; ++i) task(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    task_count_ = tasks;
    next_task_.store(0);
    ++generation_;
  }
  wake_.notify_all();
  t_inside_region = true;
  drain(task);
  t_inside_region = false;
  // Workers that woke late find no task left; wait until every worker that took the
  // region's task pointer has let go of it before the caller's std::function dies.
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return busy_workers_ == 0; });
  task_ = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace phx::kernels
