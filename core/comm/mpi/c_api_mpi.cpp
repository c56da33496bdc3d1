// phx_comm_create_mpi (comm_mpi.h): checks the arguments and MPI's state, duplicates the
// program's communicator and hands a transport over it to phx_comm_create_transport.
#include <phx/abi_guard.h>
#include <phx/abi_structs.h>
#include <phx/error.h>
#include <phynexus/comm_mpi.h>

#include "mpi_transport.h"

using namespace phx;
using namespace phx::mpi;

namespace {

constexpr std::chrono::milliseconds kDefaultTimeout{60000};

void refuse(phx_status status, const std::string& why) {
  throw Error(status, "phx_comm_create_mpi: " + why);
}

std::chrono::milliseconds read_timeout(const phx_comm_options* options) {
  const phx_comm_options read =
      read_struct(options, phx_comm_options PHX_COMM_OPTIONS_INIT, "phx_comm_create_mpi: options");
  return read.timeout_ms == 0 ? kDefaultTimeout : std::chrono::milliseconds(read.timeout_ms);
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

// MPI initialized at a level that lets the streams' worker threads call it.
void require_mpi() {
  std::lock_guard lock(mpi_lock());
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized)
    refuse(PHX_STATUS_INVALID_ARGUMENT,
           "MPI is not initialized: call MPI_Init_thread with MPI_THREAD_SERIALIZED or "
           "MPI_THREAD_MULTIPLE first");
  if (finalized) refuse(PHX_STATUS_INVALID_ARGUMENT, "MPI is already finalized");
  int level = MPI_THREAD_SINGLE;
  check(MPI_Query_thread(&level), "MPI_Query_thread");
  if (level < MPI_THREAD_SERIALIZED)
    refuse(PHX_STATUS_INVALID_ARGUMENT,
           std::string("MPI was initialized at ") + thread_level_name(level) +
               "; the collectives run on the streams' worker threads, which needs "
               "MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE (MPI_Init_thread)");
}

void require_intracommunicator(MPI_Comm base) {
  std::lock_guard lock(mpi_lock());
  if (base == MPI_COMM_NULL)
    refuse(PHX_STATUS_INVALID_ARGUMENT, "the MPI communicator is MPI_COMM_NULL");
  int inter = 0;
  check(MPI_Comm_test_inter(base, &inter), "MPI_Comm_test_inter");
  if (inter) refuse(PHX_STATUS_INVALID_ARGUMENT, "the MPI communicator is an intercommunicator");
}

// A duplicate of base, which errors return from instead of aborting the program.
MPI_Comm duplicate(MPI_Comm base, std::chrono::milliseconds timeout) {
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  {
    std::lock_guard lock(mpi_lock());
    // The nonblocking duplicate, so that a process that never joins cannot hang this one.
    check(MPI_Comm_idup(base, &dup, &request), "MPI_Comm_idup");
  }
  if (!wait_until(request, std::chrono::steady_clock::now() + timeout, "MPI_Comm_idup"))
    refuse(PHX_STATUS_DEVICE_UNAVAILABLE,
           "MPI_Comm_idup: not every process of the MPI communicator joined within " +
               std::to_string(timeout.count()) + " ms");
  std::lock_guard lock(mpi_lock());
  const int code = MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  if (code != MPI_SUCCESS) MPI_Comm_free(&dup);
  check(code, "MPI_Comm_set_errhandler");
  return dup;
}

// phx_comm_create_mpi's work; a failure throws.
phx_status create(phx_context context, size_t device, const void* mpi_comm,
                  const phx_comm_options* options, phx_comm* out_comm) {
  if (context == nullptr) refuse(PHX_STATUS_INVALID_ARGUMENT, "context is null");
  if (out_comm == nullptr) refuse(PHX_STATUS_INVALID_ARGUMENT, "out_comm is null");
  // Refused here rather than by phx_comm_create_transport, before the duplicate that the
  // other processes would wait for in vain.
  size_t devices = 0;
  if (const phx_status status = phx_device_count(context, &devices); status != PHX_STATUS_OK)
    return status;
  if (device >= devices)
    refuse(PHX_STATUS_NOT_FOUND, "no device " + std::to_string(device) + " (the context has " +
                                     std::to_string(devices) + ")");
  const std::chrono::milliseconds timeout = read_timeout(options);
  require_mpi();
  const MPI_Comm base =
      mpi_comm == nullptr ? MPI_COMM_WORLD : *static_cast<const MPI_Comm*>(mpi_comm);
  require_intracommunicator(base);
  MPI_Comm dup = duplicate(base, timeout);
  MPI_Comm control = MPI_COMM_NULL;
  std::unique_ptr<Transport> transport;
  try {
    control = duplicate(base, timeout);
    transport = std::make_unique<Transport>(dup, control, timeout);
  } catch (...) {
    std::lock_guard lock(mpi_lock());
    MPI_Comm_free(&dup);
    if (control != MPI_COMM_NULL) MPI_Comm_free(&control);
    throw;
  }
  const phx_comm_transport table = transport->table();
  phx_comm comm = nullptr;
  const phx_status status = phx_comm_create_transport(context, device, &table, &comm);
  if (status != PHX_STATUS_OK) return status;
  // The communicator owns it now, and calls table.destroy after its last collective.
  static_cast<void>(transport.release());
  *out_comm = comm;
  return PHX_STATUS_OK;
}

}  // namespace

extern "C" PHX_MPI_API phx_status phx_comm_create_mpi(phx_context context, size_t device,
                                                      const void* mpi_comm,
                                                      const phx_comm_options* options,
                                                      phx_comm* out_comm) {
  // The messages name the function (refuse) or the transport (check) already: the last
  // error is each as it is.
  return abi_guard(
      [&] { return create(context, device, mpi_comm, options, out_comm); },
      [](phx_status status, const char* message) { return phx_set_last_error(status, message); });
}
