// Estimates pi by Monte Carlo integration, split over the MPI ranks: each rank
// throws darts at the unit square and counts those landing inside the quarter
// circle; rank 0 adds up the counts. Build: mpicxx -O2 -o pi pi.cc
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <random>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  char host[MPI_MAX_PROCESSOR_NAME];
  int host_len = 0;
  MPI_Get_processor_name(host, &host_len);
  std::printf("rank %d of %d on %s\n", rank, size, host);

  const std::uint64_t samples_per_rank = 50000000;
  std::mt19937_64 rng(0x5eed + static_cast<std::uint64_t>(rank));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uint64_t inside = 0;
  for (std::uint64_t i = 0; i < samples_per_rank; ++i) {
    const double x = unit(rng);
    const double y = unit(rng);
    if (x * x + y * y <= 1.0) {
      ++inside;
    }
  }

  std::uint64_t total_inside = 0;
  MPI_Reduce(&inside, &total_inside, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    const double total = static_cast<double>(samples_per_rank) * size;
    std::printf("pi is approximately %.8f (%d ranks, %.0f samples)\n",
                4.0 * static_cast<double>(total_inside) / total, size, total);
  }
  MPI_Finalize();
  return 0;
}
