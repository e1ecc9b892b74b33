/* rank.h - which process of a distributed job this is, as the launchers
 * say it (torchrun, mpirun, srun), and file names made per process.
 *
 * Note [One lms per rank]
 * lms is not a launcher: torchrun and mpirun start one process per GPU,
 * and each process's lms must find its own GPU and write its own files.
 * The launchers say which process it is in the environment: the rank in
 * the job (RANK from torchrun, OMPI_COMM_WORLD_RANK from Open MPI,
 * PMI_RANK from MPICH and Intel MPI, PMIX_RANK, SLURM_PROCID) and the
 * rank on the node (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK,
 * MPI_LOCALRANKID, SLURM_LOCALID), taken in that order.  A CUDA device is
 * chosen by the local rank among the devices the process sees (so a
 * launcher that gives each rank one device through CUDA_VISIBLE_DEVICES
 * gets device 0 every time), and %r in a file name becomes the rank, as
 * %p becomes the process id.  Outside a launcher the rank is 0. */
#ifndef LMS_CORE_RANK_H
#define LMS_CORE_RANK_H

#include <stddef.h>

/* The rank in the job, or -1 when no launcher says. */
int lms__rank(void);
/* The rank on this node, or -1 when no launcher says. */
int lms__local_rank(void);
/* Copies path into out (size bytes) with %p the process id, %r the rank
 * (0 outside a launcher) and %% a percent sign.  Returns 0, or -1 when it
 * does not fit (out then holds as much as fits). */
int lms__path_expand(const char *path, char *out, size_t size);

#endif
