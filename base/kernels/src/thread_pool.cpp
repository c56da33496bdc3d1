#include "phx/kernels/thread_pool.h"

#include <sched.h>

#include <chrono>
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

namespace {

// A worker that finished a region spins this long for the next before it sleeps, and a
// caller whose workers are still busy spins this long before it sleeps: a model's ops
// follow each other within microseconds, while waking a sleeping thread (a futex, then an
// interrupt to its core: 10-50 us in a virtual machine) costs more than many ops take.
constexpr auto kSpin = std::chrono::microseconds(100);

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until done() or kSpin has passed; whether done() held.
template <class Done>
bool spin_until(Done done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= until) return done();
  }
}

}  // namespace

void ThreadPool::worker_loop() {
  unsigned long seen = 0;
  auto ready = [&] { return stopping_ || generation_.load(std::memory_order_acquire) != seen; };
  for (;;) {
    spin_until(ready);
    std::unique_lock<std::mutex> lock(mutex_);
    if (!ready()) {  // a run() after this sees the sleeper and wakes it
      ++sleepers_;
      wake_.wait(lock, ready);
      --sleepers_;
    }
    if (stopping_) return;
    seen = generation_.load(std::memory_order_relaxed);
    const auto* task = task_;
    if (task == nullptr) continue;  // woke after the region had already ended
    busy_workers_.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();
    t_inside_region = true;
    drain(*task);
    t_inside_region = false;
    lock.lock();
    if (busy_workers_.fetch_sub(1, std::memory_order_release) == 1) done_.notify_one();
  }
}

void ThreadPool::run(size_t tasks, const std::function<void(size_t)>& task) {
  std::unique_lock<std::mutex> region(region_mutex_, std::defer_lock);
  if (tasks <= 1 || workers_.empty() || t_inside_region || !region.try_lock()) {
    for (size_t i = 0; i < tasks; ++i) task(i);
    return;
  }
  bool sleepers = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    task_count_ = tasks;
    next_task_.store(0);
    generation_.fetch_add(1, std::memory_order_release);
    sleepers = sleepers_ > 0;
  }
  if (sleepers) wake_.notify_all();  // spinning workers see the generation themselves
  t_inside_region = true;
  drain(task);
  t_inside_region = false;
  // Workers that woke late find no task left; wait until every worker that took the
  // region's task pointer has let go of it before the caller's std::function dies.
  spin_until([&] { return busy_workers_.load(std::memory_order_acquire) == 0; });
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return busy_workers_.load(std::memory_order_relaxed) == 0; });
  task_ = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace phx::kernels
