module github.com/mpi-operator-py/hack/tools/pause

go 1.26.0
