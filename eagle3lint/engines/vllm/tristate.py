"""The three answers a static question about a vLLM class gets (does it declare the protocol,
inherit the mixin): shared by the context and the modules it calls, which it must not import."""

YES = "yes"
NO = "no"
UNKNOWN = "unknown"
