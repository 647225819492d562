# The pi example's image for MPICH (pi-mpich.yaml): the same layout as the Open
# MPI image of ./Dockerfile (mpiuser, sshd on port 2222, the program at
# /home/mpiuser/pi), built and run with Debian trixie's MPICH 4.2: bookworm's 4.0.2
# (ch4:ucx) was seen to deadlock in MPI_Finalize across pods in most runs.
#   docker build -t <registry>/mpi-pi:mpich -f examples/v2beta1/pi/mpich.Dockerfile examples/v2beta1/pi
FROM debian:trixie-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ libmpich-dev \
 && rm -rf /var/lib/apt/lists/*
COPY pi.cc /src/pi.cc
RUN mpicxx -O2 -o /src/pi /src/pi.cc

FROM debian:trixie-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends mpich openssh-server openssh-client \
 && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --uid 1000 --shell /bin/bash mpiuser \
 && printf 'Host *\n  Port 2222\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n' \
      >> /etc/ssh/ssh_config
USER mpiuser
WORKDIR /home/mpiuser
RUN ssh-keygen -q -t ed25519 -N '' -f /home/mpiuser/.ssh_host_key \
 && printf '%s\n' \
      'Port 2222' \
      'HostKey /home/mpiuser/.ssh_host_key' \
      'PidFile /home/mpiuser/sshd.pid' \
      'AuthorizedKeysFile /home/mpiuser/.ssh/authorized_keys' \
      'PasswordAuthentication no' \
      'StrictModes no' \
      'UsePAM no' \
      > /home/mpiuser/.sshd_config
COPY --from=build --chown=mpiuser:mpiuser /src/pi /home/mpiuser/pi
