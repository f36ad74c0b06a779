// The shapes of agent names, tool library names and version labels, which files, routes and
// imports all check the same way.

/** ABL agent names: a letter, then letters, digits and underscores. */
export const AGENT_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,99}$/;
/** Tool library file stems: `billing-api` for `tools/billing-api.tools.abl`. */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;
/** Semver-like labels: `1.0.0`, `2.1.3-beta.1`. */
export const VERSION_PATTERN = /^(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$/;
