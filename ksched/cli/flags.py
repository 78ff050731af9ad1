"""Every flag of ``ksched run``: kube-scheduler v1.35's command line plus ksched's own few.

One row per flag: name, pflag type, default, upstream's help (summarized) and the flag group
(``kube-scheduler --help`` sections). ``ksched`` says what ksched does differently, if anything;
docs/command-line.md is generated from the same facts. Sources: cmd/kube-scheduler/app/options
(options.go, deprecated.go), k8s.io/apiserver/pkg/server/options (serving, authentication,
authorization), component-base (leader election, feature gates, metrics, logs).
"""

from __future__ import annotations

from typing import Final

from ksched.cli.pflag import Flag
from ksched.server.options import DEFAULT_ALWAYS_ALLOW_PATHS

MISC, SECURE, AUTHN, AUTHZ, DEPRECATED, LEADER, GATES, METRICS, LOGS, KSCHED = (
    "misc",
    "secure serving",
    "authentication",
    "authorization",
    "deprecated",
    "leader election",
    "feature gate",
    "metrics",
    "logs",
    "ksched",
)
PROTOBUF: Final = "application/vnd.kubernetes.protobuf"


def _f(
    name: str, kind: str, default: object, group: str, help: str, ksched: str = "", short: str = ""
) -> Flag:
    return Flag(name=name, kind=kind, default=default, help=help, group=group, ksched=ksched, shorthand=short)


FLAGS: Final[tuple[Flag, ...]] = (
    _f("config", "string", "", MISC, "The path to the configuration file."),
    _f(
        "write-config-to",
        "string",
        "",
        MISC,
        "If set, write the configuration values to this file and exit.",
        "each profile is written as its effective per-extension-point plugin lists, not as multiPoint",
    ),
    _f(
        "master",
        "string",
        "",
        MISC,
        "The address of the Kubernetes API server (overrides any value in kubeconfig).",
        "the bind worker is off with it (bindings go from the main process)",
    ),
    _f(
        "version",
        "version",
        "false",
        MISC,
        "--version, --version=raw prints version information and quits.",
        "prints `Kubernetes v1.35.0+ksched.<version>`; `raw` prints upstream's version.Info shape",
    ),
    _f("help", "bool", False, MISC, "help for kube-scheduler", short="h"),
    # secure serving
    _f(
        "bind-address",
        "ip",
        "127.0.0.1",
        SECURE,
        "The IP address on which to listen for the --secure-port port.",
        "default 127.0.0.1 (upstream 0.0.0.0): loopback unless told otherwise",
    ),
    _f(
        "secure-port",
        "int",
        10259,
        SECURE,
        "The port on which to serve HTTPS with authentication and authorization. 0: no HTTPS.",
        "HTTPS with --tls-cert-file/--tls-private-key-file; without them a self-signed certificate (kept "
        "in --cert-dir when set, else in memory), as upstream; docs/serving.md",
    ),
    _f("cert-dir", "string", "", SECURE, "The directory where the TLS certs are located."),
    _f("tls-cert-file", "string", "", SECURE, "File containing the default x509 certificate for HTTPS."),
    _f("tls-private-key-file", "string", "", SECURE, "File containing the default x509 private key."),
    _f(
        "tls-min-version", "string", "", SECURE, "Minimum TLS version supported (VersionTLS12, VersionTLS13)."
    ),
    _f(
        "tls-cipher-suites",
        "stringSlice",
        (),
        SECURE,
        "Comma-separated list of cipher suites for the server.",
    ),
    _f(
        "tls-sni-cert-key",
        "stringSlice",
        (),
        SECURE,
        "A pair of x509 certificate and private key file paths, optionally suffixed with domain patterns.",
    ),
    _f(
        "permit-port-sharing",
        "bool",
        False,
        SECURE,
        "If true, SO_REUSEPORT will be used when binding the port.",
    ),
    _f(
        "permit-address-sharing",
        "bool",
        False,
        SECURE,
        "If true, SO_REUSEADDR will be used when binding the port.",
    ),
    _f(
        "disable-http2-serving",
        "bool",
        False,
        SECURE,
        "If true, HTTP2 serving will be disabled [default=false]",
        "ksched's endpoint speaks HTTP/1.1 only, so it is off either way",
    ),
    _f(
        "http2-max-streams-per-connection",
        "int",
        0,
        SECURE,
        "The limit the server gives to clients for the maximum number of streams in an HTTP/2 connection.",
    ),
    # authentication
    _f(
        "authentication-kubeconfig",
        "string",
        "",
        AUTHN,
        "kubeconfig file pointing at the 'core' kubernetes server with rights to create tokenreviews.",
    ),
    _f(
        "authentication-skip-lookup",
        "bool",
        False,
        AUTHN,
        "If false, the authentication-kubeconfig is used to look up missing authentication configuration.",
    ),
    _f(
        "authentication-token-webhook-cache-ttl",
        "duration",
        10.0,
        AUTHN,
        "The duration to cache responses from the webhook token authenticator.",
    ),
    _f(
        "authentication-tolerate-lookup-failure",
        "bool",
        True,
        AUTHN,
        "If true, failures to look up missing authentication configuration are not fatal.",
    ),
    _f(
        "client-ca-file",
        "string",
        "",
        AUTHN,
        "If set, client certificates signed by one of these authorities authenticate as their CommonName.",
    ),
    _f(
        "requestheader-client-ca-file",
        "string",
        "",
        AUTHN,
        "Root certificates to verify client certificates before trusting usernames in request headers.",
    ),
    _f(
        "requestheader-allowed-names",
        "stringSlice",
        (),
        AUTHN,
        "Client certificate common names allowed to provide usernames in request headers.",
    ),
    _f(
        "requestheader-username-headers",
        "stringSlice",
        ("x-remote-user",),
        AUTHN,
        "List of request headers to inspect for usernames.",
    ),
    _f("requestheader-uid-headers", "stringSlice", (), AUTHN, "List of request headers to inspect for UIDs."),
    _f(
        "requestheader-group-headers",
        "stringSlice",
        ("x-remote-group",),
        AUTHN,
        "List of request headers to inspect for groups.",
    ),
    _f(
        "requestheader-extra-headers-prefix",
        "stringSlice",
        ("x-remote-extra-",),
        AUTHN,
        "List of request header prefixes to inspect.",
    ),
    # authorization
    _f(
        "authorization-kubeconfig",
        "string",
        "",
        AUTHZ,
        "kubeconfig file pointing at the 'core' kubernetes server, to create subjectaccessreviews.",
    ),
    _f(
        "authorization-always-allow-paths",
        "stringSlice",
        DEFAULT_ALWAYS_ALLOW_PATHS,
        AUTHZ,
        "A list of HTTP paths to skip during authorization.",
    ),
    _f(
        "authorization-webhook-cache-authorized-ttl",
        "duration",
        10.0,
        AUTHZ,
        "The duration to cache 'authorized' responses from the webhook authorizer.",
    ),
    _f(
        "authorization-webhook-cache-unauthorized-ttl",
        "duration",
        10.0,
        AUTHZ,
        "The duration to cache 'unauthorized' responses from the webhook authorizer.",
    ),
    # deprecated (applied only without --config, except pod-max-in-unschedulable-pods-duration)
    _f(
        "profiling",
        "bool",
        True,
        DEPRECATED,
        "DEPRECATED: enable profiling via web interface host:port/debug/pprof/. Ignored with --config.",
        "sets enableProfiling (ksched's /debug/profile and /debug/pprof/profile, behind authorization)",
    ),
    _f(
        "contention-profiling",
        "bool",
        True,
        DEPRECATED,
        "DEPRECATED: enable block profiling, if profiling is enabled. Ignored with --config.",
    ),
    _f(
        "kubeconfig",
        "string",
        "",
        DEPRECATED,
        "DEPRECATED: path to kubeconfig file with authorization and master location information. "
        "Ignored with --config.",
    ),
    _f(
        "kube-api-content-type",
        "string",
        PROTOBUF,
        DEPRECATED,
        "DEPRECATED: content type of requests sent to apiserver. Ignored with --config.",
        "ksched speaks JSON: application/json is used as is; protobuf is logged once and JSON is used",
    ),
    _f(
        "kube-api-qps",
        "float32",
        50.0,
        DEPRECATED,
        "DEPRECATED: QPS to use while talking with kubernetes apiserver. Ignored with --config.",
    ),
    _f(
        "kube-api-burst",
        "int32",
        100,
        DEPRECATED,
        "DEPRECATED: burst to use while talking with kubernetes apiserver. Ignored with --config.",
    ),
    _f(
        "pod-max-in-unschedulable-pods-duration",
        "duration",
        300.0,
        DEPRECATED,
        "DEPRECATED: the maximum time a pod can stay in unschedulablePods before it is moved to "
        "backoffQ or activeQ.",
    ),
    # leader election
    _f(
        "leader-elect",
        "bool",
        True,
        LEADER,
        "Start a leader election client and gain leadership before executing the main loop.",
    ),
    _f(
        "leader-elect-lease-duration",
        "duration",
        15.0,
        LEADER,
        "How long non-leader candidates wait after observing a renewal before trying to acquire leadership.",
    ),
    _f(
        "leader-elect-renew-deadline",
        "duration",
        10.0,
        LEADER,
        "The interval between attempts by the acting master to renew a leadership slot before it stops "
        "leading; at most the lease duration.",
    ),
    _f(
        "leader-elect-retry-period",
        "duration",
        2.0,
        LEADER,
        "The duration the clients should wait between attempting acquisition and renewal of a leadership.",
    ),
    _f(
        "leader-elect-resource-lock",
        "string",
        "leases",
        LEADER,
        "The type of resource object that is used for locking during leader election ('leases').",
        "only leases",
    ),
    _f(
        "leader-elect-resource-name",
        "string",
        "kube-scheduler",
        LEADER,
        "The name of resource object that is used for locking during leader election.",
    ),
    _f(
        "leader-elect-resource-namespace",
        "string",
        "kube-system",
        LEADER,
        "The namespace of resource object that is used for locking during leader election.",
    ),
    # feature gates
    _f(
        "feature-gates",
        "mapStringBool",
        {},
        GATES,
        "Comma-separated component:key=value pairs for feature gates (component defaults to kube; "
        "repeatable).",
        "only the scheduler's gates, each only at the value ksched implements (ksched.config.features)",
    ),
    _f(
        "emulated-version",
        "stringSlice",
        (),
        GATES,
        "The versions different components emulate their capabilities of (e.g. kube=1.35).",
        "only 1.35 (kube=1.35)",
    ),
    _f(
        "min-compatibility-version",
        "stringSlice",
        (),
        GATES,
        "The min version of control plane components the server should be compatible with "
        "(kube=1.32..1.35, default 1.34; at most the emulated version).",
        "accepted in upstream's range; it changes nothing a scheduler does",
    ),
    # metrics
    _f(
        "show-hidden-metrics-for-version",
        "string",
        "",
        METRICS,
        "The previous version for which you want to show hidden metrics (only the previous minor, 1.34).",
        "accepted when valid; ksched has no hidden metrics to show",
    ),
    _f(
        "disabled-metrics",
        "stringSlice",
        (),
        METRICS,
        "This flag provides an escape hatch for misbehaving metrics.",
        "refused when set",
    ),
    _f(
        "allow-metric-labels",
        "stringToString",
        {},
        METRICS,
        "The map from metric-label to value allow-list of this label.",
        "refused when set",
    ),
    _f(
        "allow-metric-labels-manifest",
        "string",
        "",
        METRICS,
        "The path to the manifest file that contains the allow-list mapping.",
        "refused when set",
    ),
    # logs
    _f("v", "int32", 0, LOGS, "number for the log level verbosity", "0-3: INFO, 4+: DEBUG", short="v"),
    _f(
        "vmodule",
        "string",
        "",
        LOGS,
        "comma-separated list of pattern=N settings for file-filtered logging (only works for text format).",
        "patterns match logger (module) names",
    ),
    _f("logging-format", "string", "text", LOGS, 'Sets the log format. Permitted formats: "text", "json".'),
    _f(
        "log-flush-frequency",
        "duration",
        5.0,
        LOGS,
        "Maximum number of seconds between log flushes.",
        "ksched writes every record at once",
    ),
    _f(
        "log-text-split-stream",
        "bool",
        False,
        LOGS,
        "[Alpha] In text format, write error messages to stderr and info messages to stdout.",
    ),
    _f(
        "log-text-info-buffer-size",
        "string",
        "0",
        LOGS,
        "[Alpha] In text format with split output streams, the info messages can be buffered.",
        "only 0: ksched does not buffer",
    ),
    _f(
        "log-json-split-stream",
        "bool",
        False,
        LOGS,
        "[Alpha] In JSON format, write error messages to stderr and info messages to stdout.",
    ),
    _f(
        "log-json-info-buffer-size",
        "string",
        "0",
        LOGS,
        "[Alpha] In JSON format with split output streams, the info messages can be buffered.",
        "only 0: ksched does not buffer",
    ),
    # ksched's own
    _f(
        "insecure-port",
        "int",
        -1,
        KSCHED,
        "ksched: serve /metrics, /healthz, /readyz over plain HTTP without authentication on this port "
        "of 127.0.0.1 (0: any free port; off unless given).",
        "ksched's own",
    ),
    _f(
        "plugin",
        "stringSlice",
        (),
        KSCHED,
        "ksched: an out-of-tree plugin, module:factory (repeatable; entry points of group ksched.plugins "
        "are loaded too).",
        "ksched's own",
    ),
    _f(
        "bind-worker",
        "string",
        "auto",
        KSCHED,
        "ksched: post bindings from a child process (auto: when the process may run on 2+ CPUs; on; off).",
        "ksched's own",
    ),
)
BY_NAME: Final = {f.name: f for f in FLAGS}
