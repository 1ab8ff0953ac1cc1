# Sourced by the bench scripts: builds Open MPI's mpibench (../shared/peers/mpibench.c) into a
# temporary directory and sets $mpi to it, or leaves $mpi empty, saying so, where mpicc or
# mpirun is missing. Lets mpirun run as root and oversubscribed, as CI does.
mpi=""
if command -v mpicc >/dev/null && command -v mpirun >/dev/null && [ -f ../shared/peers/mpibench.c ]; then
  mpi=$(mktemp -d)/mpibench
  mpicc -O2 ../shared/peers/mpibench.c -o "$mpi"
else
  echo "Open MPI (mpicc, mpirun) not found: measuring nbcoll only"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
