# The pi example's image for Intel MPI (pi-intel.yaml), from Intel's oneAPI apt
# repository: the same layout as the Open MPI image of ./Dockerfile (mpiuser, sshd
# on port 2222, the program at /home/mpiuser/pi). The entry point loads Intel
# MPI's environment, then runs the container's arguments (mpirun or sshd).
#   docker build -t <registry>/mpi-pi:intel -f examples/v2beta1/pi/intel.Dockerfile examples/v2beta1/pi
FROM debian:bookworm-slim AS oneapi
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl gpg \
 && curl -fsSL https://apt.repos.intel.com/intel-gpg-keys/GPG-PUB-KEY-INTEL-SW-PRODUCTS.PUB \
      | gpg --dearmor -o /usr/share/keyrings/oneapi.gpg \
 && echo 'deb [signed-by=/usr/share/keyrings/oneapi.gpg] https://apt.repos.intel.com/oneapi all main' \
      > /etc/apt/sources.list.d/oneapi.list \
 && rm -rf /var/lib/apt/lists/*

FROM oneapi AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ intel-oneapi-mpi-devel \
 && rm -rf /var/lib/apt/lists/*
COPY pi.cc /src/pi.cc
RUN . /opt/intel/oneapi/mpi/latest/env/vars.sh && mpicxx -O2 -o /src/pi /src/pi.cc

FROM oneapi
RUN apt-get update \
 && apt-get install -y --no-install-recommends intel-oneapi-mpi openssh-server openssh-client \
 && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --uid 1000 --shell /bin/bash mpiuser \
 && printf 'Host *\n  Port 2222\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n' \
      >> /etc/ssh/ssh_config \
 && printf '#!/bin/sh\n. /opt/intel/oneapi/mpi/latest/env/vars.sh\nexec "$@"\n' > /entrypoint.sh \
 && chmod 0755 /entrypoint.sh
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
ENTRYPOINT ["/entrypoint.sh"]
