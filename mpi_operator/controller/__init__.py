"""The MPIJob controller: event handlers, the sync handler and status."""
