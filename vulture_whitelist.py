"""Name what vulture calls unused but something reads: a framework, a protocol, a test.

`vulture probetui vulture_whitelist.py --min-confidence 80` must find nothing
(tests/test_house_vulture.py); at 60% the names below are the survivors, each with who reads it.
A name that nothing reads is deleted, never added here. This file is never imported.
"""

# ruff: noqa: B018

_ = object()

# -- signatures a caller fixes --------------------------------------------------------------

_.parameters  # Screen.check_action(action, parameters): Textual passes both
_.objtype  # a descriptor's __get__(obj, objtype): Python passes both

# -- Textual: read by the framework by name -------------------------------------------------

# class variables Textual reads: bindings, styles, the screen's title and focus rules
_.BINDINGS
_.CSS_PATH
_.DEFAULT_CSS
_.COMPONENT_CLASSES
_.TITLE
_.AUTO_FOCUS
_.ALLOW_SELECT
_.border_title  # a widget's border title, drawn by Textual
_.virtual_size  # a reactive Textual's scrolling reads
_.get_default_screen  # App.get_default_screen: Textual asks for the first screen
_.discover  # Provider.discover: the command palette asks for its hits
# handlers Textual calls by name: on_<message>, _on_<message>, watch_<reactive>
_.on_click
_.on_key
_.on_resize
_.on_unmount
_.on_screen_resume
_.on_mouse_scroll_up
_.on_mouse_scroll_down
_._on_focus
_._on_blur
_.watch_sort
# handlers bound by @on(...): Textual calls them for the message named in the decorator
_._filter_changed
_._filter_done
_._goto_done
# actions: a binding's "name(args)" calls action_<name>
_.action_cursor
_.action_filter
_.action_fold
_.action_fold_all
_.action_follow
_.action_goto
_.action_help
_.action_jump
_.action_notable
_.action_output
_.action_page
_.action_pause
_.action_play
_.action_prev_probe
_.action_probe_all
_.action_probe_now
_.action_problem
_.action_quit
_.action_scroll_time
_.action_screenshot_svg
_.action_sort
_.action_speed
_.action_step
_.action_what_if
_.action_worst
_.action_zoom
# Rich's Text attributes, read when the text is rendered
_.no_wrap
_.overflow

# -- other libraries and protocols ----------------------------------------------------------

_.add_local_arguments  # cli/__init__.py COMMANDS names a command's functions as strings
_.add_demo_arguments
_.run_demo
_._negative_number_matcher  # argparse reads it to tell "-5m" (a value) from an option
_.MAX_INCOMPLETE_EVENT_SIZE  # httpcore's HTTP/1.1 connection reads its header bound here
_.refresh_api_key_hook  # the kubernetes client calls it before each request
_.pipe_data_received  # asyncio.SubprocessProtocol callbacks, called by the event loop
_.pipe_connection_lost
_.process_exited

# -- read by the tests or the benchmarks: counters and upstream's functions pinned there ----

_.truncated  # promtext.Parsed: a parse cut at MAX_SERIES says so (tests/agent/test_promtext.py)
_.stats  # agent Ring.stats (tests/agent/test_ring.py)
_.is_in_backoff_since_update  # upstream's Backoff.IsInBackOffSinceUpdate (tests/kubelet)
_.HOUSEKEEPING_PERIOD  # the period the back-off's GC docstring cites (upstream's housekeeping)
_.slow_start  # lint's model of a slow app (tests/lint/test_simulated.py)
_.VirtualClock  # the prober's tests' clock (tests/prober/test_manager.py)
_.advance
_.dropped_triggers  # the Manager's count of readiness triggers dropped (tests/prober)
_.cleanup_pods  # upstream's Manager.CleanupPods (tests/prober/test_manager.py)
_.with_  # ContainerStatus.with_ (tests/ui/test_workload_probes.py)
_.writer_cpu_s  # the recorder's writer thread CPU (benchmarks/record.py)
_.proxy_name  # an agent pod's pods/proxy name (tests/runtime/kubernetes)
_.token_source  # a cluster target's credentials (tests/runtime/kubernetes)
_.resource_request  # ApiPath, as the API server's RequestInfo has it (tests' emulator mirrors)
_.refused_total  # the guard's count of refused requests (tests/runtime/kubernetes/test_guard.py)
_.last_transition_time  # observed pod fields read by tests/runtime/kubernetes/test_observed.py
_.host_ip
_.condition
_.watches  # the reflector's count of watches (tests/runtime/kubernetes/test_reflector.py)
_.supervisor_pid  # the local runtime's supervisor (tests/runtime)
_.dropped_lines  # a process's output lines dropped (tests/runtime/test_process.py)
_.literal_env  # a container's literal env (tests/spec, tests/runtime/demo)
_.shifted  # Event.shifted (tests/simulate)
_.young_passes  # the UI's GC pacer's count (tests/ui/test_gcpace.py)
_.pids  # ShardPool.pids: the shards alive (tests/shards)
