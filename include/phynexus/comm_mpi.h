/*
 * Phynexus: communicators across processes over MPI (libphynexus_mpi, since API 0.3).
 *
 * A communicator of comm.h whose ranks are the processes of an MPI communicator, one rank
 * per process: one rank per device on one machine, or one per host on a cluster. Each
 * process calls the collectives of comm.h for its own rank only (its rank in the MPI
 * communicator) on a stream of its device, and the results are those of the in-process
 * communicator, bit for bit: the same reduction order, rank 0 first. This header's
 * function lives in libphynexus_mpi, a library of its own, so that libphynexus links no
 * MPI; link both (find_package(Phynexus): Phynexus::phynexus_mpi). It does not need
 * mpi.h. The conventions of phynexus.h hold here too. docs/comm.md, "Across processes:
 * MPI", explains how to build and run it.
 *
 * MPI. The program initializes MPI itself, with MPI_Init_thread at MPI_THREAD_SERIALIZED
 * or MPI_THREAD_MULTIPLE: the collectives run on the streams' worker threads. Under
 * MPI_THREAD_SERIALIZED the program makes no MPI call of its own while collectives are
 * queued (synchronize the communicator's streams first); the library's own calls never
 * overlap. Destroy the communicator (or its context) before MPI_Finalize.
 *
 * Faults. Every wait of the library polls with a deadline, the timeout of
 * phx_comm_options: a rank that is gone, or does not reach a collective or a message in
 * time, fails the others' parts with DEVICE_UNAVAILABLE, naming the operation and the
 * ranks waited for, returned by each stream's next phx_stream_wait or
 * phx_stream_synchronize. MPI cannot cancel a collective, so after a collective failed
 * that way the communicator only fails (DEVICE_UNAVAILABLE at once): destroy it. Ranks
 * that disagree (another collective, dtype, size, op or root) fail it on every rank with
 * INVALID_ARGUMENT, as in one process.
 */
#ifndef PHYNEXUS_COMM_MPI_H
#define PHYNEXUS_COMM_MPI_H

#include "comm.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(PHX_BUILDING_MPI_LIBRARY)
#define PHX_MPI_API __attribute__((visibility("default")))
#else
#define PHX_MPI_API
#endif

/* Creates a communicator over the processes of an MPI communicator: mpi_comm points to an
 * MPI_Comm (an intracommunicator), or is null for MPI_COMM_WORLD. This process is rank
 * MPI_Comm_rank of it, on device; phx_comm_ranks gives MPI_Comm_size. Collective over
 * mpi_comm: every process calls it, in the same order as its other collectives on
 * mpi_comm. The communicator duplicates mpi_comm twice (MPI_Comm_idup), so that its traffic
 * never mixes with the program's, and frees them when destroyed; mpi_comm is
 * read during the call only. options may be null; timeout_ms (0: 60000) bounds every wait
 * for other processes, this call's included. The caller owns *out_comm and destroys it
 * with phx_comm_destroy, before MPI_Finalize, in every process: the duplicates are freed
 * after a barrier among the processes (bounded by the timeout; left allocated without it).
 * Returns INVALID_ARGUMENT (a null context or out_comm, MPI not initialized or already
 * finalized, initialized below MPI_THREAD_SERIALIZED, MPI_COMM_NULL, an
 * intercommunicator), NOT_FOUND (no such device), DEVICE_UNAVAILABLE (a process did not
 * join within the timeout, an MPI error), OUT_OF_MEMORY. Externally synchronized:
 * mpi_comm, as MPI's own collectives on it are. */
PHX_MPI_API phx_status phx_comm_create_mpi(phx_context context, size_t device, const void* mpi_comm,
                                           const phx_comm_options* options, phx_comm* out_comm);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PHYNEXUS_COMM_MPI_H */
