"""The door: a long-running filescout process (an editor's server, an MCP server) answers the
questions of a command run in a terminal over a local socket, so the command need not open the
index, load the engine or refresh anything itself. `address.py` and `client.py` import only the
standard library: a command that finds a door pays for nothing else."""
