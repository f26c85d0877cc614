"""The exceptions forecaster raises on purpose.

Every error a user can cause or meet in operation is a ``ForecasterError``; the CLI prints its
message on one line and exits non-zero, never a traceback. Library exceptions are kept as the
cause (``raise SourceError(...) from exc``) so logs still carry the detail.

    ForecasterError
    +-- ConfigError        bad configuration; the message names the field
    +-- SourceError        a data source failed (bad file, bad PromQL, unreachable server)
    +-- DataError          data present but unusable (too short, all gaps)
    +-- ModelError         a model could not be fitted, predicted or loaded
    +-- ActuationError     a write to the cluster failed
        +-- ConflictError  409: the object changed since it was read (or already exists)
        +-- NotLeaderError a write refused because this replica may no longer act
        +-- WatchExpiredError  410: a watch's resourceVersion is gone; list again
"""


class ForecasterError(Exception):
    """Base class: an error with a message meant for the operator."""


class ConfigError(ForecasterError):
    """The configuration is invalid; the message names the offending field."""


class SourceError(ForecasterError):
    """A data source failed: unreadable file, bad query, unreachable or failing server."""


class DataError(ForecasterError):
    """The data is present but cannot support the requested operation (e.g. too short)."""


class ModelError(ForecasterError):
    """A model failed to fit, predict, save or load."""


class ActuationError(ForecasterError):
    """A write to the cluster failed; the cause keeps the API exception."""


class ConflictError(ActuationError):
    """409: the object changed since it was read (or already exists); re-read and retry."""


class NotLeaderError(ActuationError):
    """A write was refused before it was sent: this replica's leadership lapsed (or is about to)."""


class WatchExpiredError(ActuationError):
    """410 Gone: the watch's resourceVersion was compacted away; list again and re-watch."""
