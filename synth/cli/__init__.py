"""The command line: the verbs and their arguments, what they print for people, the report, the demo
and `synth check`."""
