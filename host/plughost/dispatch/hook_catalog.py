"""The named hooks MaiBot's runtime runs, as HookSpecs an embedder may register.

Plugins written for MaiBot subscribe to these names. An application that runs
the same moments (before the planner's request, after a command...) registers
the specs, so each hook allows what MaiBot's allows: whether a handler may
abort it or rewrite its payload, and how long a handler may take by default
(0: the host's ``call_timeout``). ``parameters`` lists the payload keys MaiBot
passes, for the application to pass the same.

    from plughost.dispatch.hook_catalog import MAIBOT_HOOK_SPECS

    for spec in MAIBOT_HOOK_SPECS:
        host.register_hook_spec(spec)

The catalog was read from MaiBot 1.3's hook registrations (names, flags,
default limits and payload keys); plughost runs none of these hooks itself.
``plughost check`` uses the names to point out a likely misspelt hook.
"""

from __future__ import annotations

import difflib

from plughost.dispatch.hooks import HookSpec

__all__ = ["MAIBOT_HOOK_SPECS", "PLANNER_HOOK_SPECS", "closest_maibot_hook"]

MAIBOT_HOOK_SPECS: tuple[HookSpec, ...] = (
    HookSpec(
        "emoji.maisaka.before_select",
        default_timeout_ms=5000,
        parameters=(
            "stream_id",
            "requested_emotion",
            "reasoning",
            "context_texts",
            "sample_size",
            "abort_message",
        ),
    ),
    HookSpec(
        "emoji.maisaka.after_select",
        default_timeout_ms=5000,
        parameters=(
            "stream_id",
            "requested_emotion",
            "reasoning",
            "context_texts",
            "sample_size",
            "selected_emoji",
            "selected_emoji_hash",
            "matched_emotion",
            "abort_message",
        ),
    ),
    HookSpec(
        "emoji.register.after_build_description",
        default_timeout_ms=5000,
        parameters=("emoji", "description", "image_format"),
    ),
    HookSpec(
        "send_service.after_build_message",
        default_timeout_ms=5000,
        parameters=(
            "message",
            "stream_id",
            "processed_plain_text",
            "typing",
            "set_reply",
            "storage_message",
            "show_log",
        ),
    ),
    HookSpec(
        "send_service.before_send",
        default_timeout_ms=5000,
        parameters=(
            "message",
            "typing",
            "set_reply",
            "reply_message_id",
            "storage_message",
            "show_log",
        ),
    ),
    HookSpec(
        "send_service.after_send",
        default_timeout_ms=5000,
        allow_abort=False,
        allow_kwargs_mutation=False,
        parameters=(
            "message",
            "sent",
            "typing",
            "set_reply",
            "reply_message_id",
            "storage_message",
            "show_log",
        ),
    ),
    HookSpec(
        "maisaka.planner.before_request",
        default_timeout_ms=6000,
        allow_abort=False,
        parameters=(
            "items",
            "item_schema_version",
            "tool_definitions",
            "selected_history_count",
            "built_message_count",
            "selection_reason",
            "session_id",
        ),
    ),
    HookSpec(
        "maisaka.planner.after_response",
        default_timeout_ms=6000,
        allow_abort=False,
        parameters=(
            "output_items",
            "item_schema_version",
            "selected_history_count",
            "built_message_count",
            "selection_reason",
            "session_id",
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
        ),
    ),
    HookSpec(
        "maisaka.replyer.before_request",
        default_timeout_ms=6000,
        allow_abort=False,
        parameters=(
            "session_id",
            "request_type",
            "task_name",
            "model_name",
            "extra_prompt",
            "attempt",
            "retry_count",
            "max_retries",
            "reply_message_id",
            "reply_reason",
            "selected_expression_ids",
            "reply_tool_args",
        ),
    ),
    HookSpec(
        "maisaka.replyer.before_model_request",
        default_timeout_ms=6000,
        allow_abort=False,
        parameters=(
            "items",
            "item_schema_version",
            "session_id",
            "request_type",
            "task_name",
            "requested_model_name",
            "selected_model_name",
            "selected_model_visual",
            "attempt",
            "retry_count",
            "max_retries",
            "reply_message_id",
            "reply_reason",
            "selected_expression_ids",
            "reply_tool_args",
        ),
    ),
    HookSpec(
        "maisaka.replyer.after_response",
        default_timeout_ms=6000,
        allow_abort=False,
        parameters=(
            "response",
            "output_items",
            "item_schema_version",
            "session_id",
            "request_type",
            "task_name",
            "requested_model_name",
            "attempt",
            "retry_count",
            "max_retries",
            "reply_message_id",
            "selected_expression_ids",
            "reply_tool_args",
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
            "retry",
            "retry_reason",
            "matched_regex",
            "matched_regex_pattern",
            "matched_regex_description",
        ),
    ),
    HookSpec(
        "maisaka.reply.before_post_process",
        default_timeout_ms=6000,
        allow_abort=False,
        parameters=(
            "response",
            "session_id",
            "reply_message_id",
            "reply_tool_args",
            "skip_post_process",
            "enable_splitter",
            "enable_chinese_typo",
        ),
    ),
    HookSpec(
        "expression.select.before_select",
        default_timeout_ms=5000,
        parameters=(
            "chat_id",
            "chat_info",
            "max_num",
            "target_message",
            "reply_reason",
            "think_level",
        ),
    ),
    HookSpec(
        "expression.select.after_selection",
        default_timeout_ms=5000,
        parameters=(
            "chat_id",
            "chat_info",
            "max_num",
            "target_message",
            "reply_reason",
            "think_level",
            "selected_expressions",
            "selected_expression_ids",
        ),
    ),
    HookSpec(
        "expression.learn.after_extract",
        default_timeout_ms=5000,
        parameters=("session_id", "message_count", "expressions", "jargon_entries"),
    ),
    HookSpec(
        "expression.learn.before_upsert",
        default_timeout_ms=5000,
        parameters=("session_id", "situation", "style"),
    ),
    HookSpec(
        "jargon.extract.before_persist",
        default_timeout_ms=5000,
        parameters=("session_id", "session_name", "entries"),
    ),
    HookSpec(
        "jargon.inference.before_finalize",
        default_timeout_ms=5000,
        parameters=(
            "session_id",
            "session_name",
            "content",
            "count",
            "raw_content_list",
            "comparison_result",
            "is_jargon",
            "meaning",
            "is_complete",
            "last_inference_count",
        ),
    ),
    HookSpec(
        "chat.receive.before_process",
        default_timeout_ms=0,
        parameters=("message",),
    ),
    HookSpec(
        "chat.receive.after_process",
        default_timeout_ms=0,
        parameters=("message",),
    ),
    HookSpec(
        "chat.command.before_execute",
        default_timeout_ms=0,
        parameters=("message", "command_name", "plugin_id", "matched_groups"),
    ),
    HookSpec(
        "chat.command.after_execute",
        default_timeout_ms=0,
        allow_abort=False,
        parameters=(
            "message",
            "command_name",
            "plugin_id",
            "matched_groups",
            "success",
            "response",
            "intercept_message_level",
            "continue_process",
        ),
    ),
)
"""Every hook MaiBot declares, with its flags, default limit and payload keys."""

PLANNER_HOOK_SPECS = tuple(s for s in MAIBOT_HOOK_SPECS if s.name.startswith("maisaka.planner."))
"""The planner's two hooks (seed 003): rewriting allowed, aborting not, 6 s per handler."""

_NAMES = tuple(spec.name for spec in MAIBOT_HOOK_SPECS)


def closest_maibot_hook(name: str) -> str | None:
    """The MaiBot hook ``name`` is probably a misspelling of, or None (also for an exact name)."""
    if name in _NAMES:
        return None
    found = difflib.get_close_matches(name, _NAMES, n=1, cutoff=0.85)
    return found[0] if found else None
