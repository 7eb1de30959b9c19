"""The JSON-RPC face of the engine: thin pygls handlers, nothing else."""
