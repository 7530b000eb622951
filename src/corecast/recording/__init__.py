"""What crosses from the preload library to the models: the recording (``record``: its
schema, every field with its unit, the decoders from the live struct and from JSON Lines),
the C contract it rests on (``abi``: native/model_abi.h's names and sizes), the one rule
its values are read by (``values``) and an OpenCL kernel's recorded statistics (``kernelstats``).  Data, not models: the models, the
offline tools and the views read it through here.  Standard library only: imported inside
profiled programs."""
