"""What the tests and the benchmarks run against on loopback: a model server that speaks Ollama's and
the OpenAI API (`model_server`), the answers it gives (`fakes`), System One servers (`systemone_servers`:
sparrow-decider, jevcompat's mock), a PostgreSQL server of its own (`postgres_server`) and the gate's
traffic (`gate_traffic`). A package of its own so that benchmarks need not import the test package;
not part of the installed `adri_pipeline`."""
