# Sourced by the bench scripts: builds Open MPI's mpibench (the peer programs' directory,
# NBC_PEERS, default ../shared/peers beside the repository) into a temporary directory and sets
# $mpi to it, or leaves $mpi empty, saying why, where mpicc, mpirun or the source is missing.
# Lets mpirun run as root and oversubscribed, as CI does.
mpi=""
peers=${NBC_PEERS:-../shared/peers}
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  echo "Open MPI (mpicc, mpirun) not found (apt-get install libopenmpi-dev openmpi-bin): measuring nbcoll only"
elif [ ! -f "$peers/mpibench.c" ]; then
  echo "$peers/mpibench.c not found (set NBC_PEERS to the peer programs' directory): measuring nbcoll only"
else
  mpi=$(mktemp -d)/mpibench
  mpicc -O2 "$peers/mpibench.c" -o "$mpi"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
