// A fixed set of worker threads that run the tasks of one parallel region at a time.
// The kernels split their work into tasks; the calling thread takes part, so a pool
// of N threads starts N - 1 workers. Between regions a worker spins for a while (100 us)
// before it sleeps, so that the next op's region starts without waking it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace phx::kernels {

class ThreadPool {
 public:
  // threads == 0 means one per hardware thread. The pool never has fewer than one.
  explicit ThreadPool(unsigned threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Runs task(i) for every i in [0, tasks) and returns when all have finished.
  // Tasks run inline on the caller when tasks <= 1, when called from inside a task
  // (nesting), or when another thread holds the pool: a region never waits for another.
  // A task may throw (a scratch buffer's std::bad_alloc): the tasks no thread has taken
  // yet are then skipped, and run rethrows the first exception on the calling thread once
  // the tasks already running have finished.
  void run(size_t tasks, const std::function<void(size_t)>& task);

 private:
  void worker_loop();
  void drain(const std::function<void(size_t)>& task);

  std::vector<std::thread> workers_;
  std::mutex region_mutex_;  // one region at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(size_t)>* task_ = nullptr;
  size_t task_count_ = 0;
  std::atomic<size_t> next_task_{0};
  std::exception_ptr error_;  // a task's exception, under mutex_
  // Changed under mutex_; read without it by the threads that spin on them.
  std::atomic<unsigned> busy_workers_{0};
  std::atomic<unsigned long> generation_{0};
  unsigned sleepers_ = 0;  // workers waiting on wake_, under mutex_
  std::atomic<bool> stopping_{false};
};

// The number of hardware threads, honouring the process's CPU affinity mask.
unsigned hardware_threads();

}  // namespace phx::kernels
