"""The MPIJob APIs: models, defaulting and validation. Imports nothing else of ours."""
