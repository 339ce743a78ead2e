"""self-evolve for Python harnesses: the self-evolve WebAssembly component run in wasmtime-py,
with the five capabilities it imports (a filesystem scoped to named roots, HTTP to named
endpoints, subagents, a clock, a log) written in Python.

    from self_evolve import load_plugin, user_context
    plugin = load_plugin(fs={"user_skills": "~/.agent/skills", "state": "~/.agent/self-evolve"})
    plugin.init("{}", ["tools", "commands"])
    plugin.tools_call(user_context("s1"), "skill_manage", '{"action": "list"}')
"""
from .clock import ManualClock, SystemClock
from .fs import FsCap
from .host import (
    ConfigError,
    Limits,
    Plugin,
    PluginError,
    PluginTrap,
    Refused,
    load_plugin,
)
from .http import Endpoint, HttpCap
from .subagent import Script, ScriptedProvider
from .types import (
    ActivationResult,
    CallContext,
    CommandResult,
    Document,
    FileInput,
    FsError,
    HttpError,
    Independence,
    ReviewRequest,
    Root,
    SkillInput,
    ToolEvent,
    user_context,
)

__all__ = [
    "ActivationResult", "CallContext", "CommandResult", "ConfigError", "Document", "Endpoint", "FileInput",
    "FsCap", "FsError", "HttpCap", "HttpError", "Independence", "Limits", "ManualClock", "Plugin", "PluginError",
    "PluginTrap", "Refused", "ReviewRequest", "Root", "Script", "ScriptedProvider", "SkillInput", "SystemClock",
    "ToolEvent", "load_plugin", "user_context",
]
__version__ = "0.1.0"
