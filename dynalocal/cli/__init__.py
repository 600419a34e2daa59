"""The command line: serve, report, streams tail, repair and the container health check."""
