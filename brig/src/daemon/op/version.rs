//! `version`: the daemon's build, with the fields `brig version --json` prints.

use crate::build_info::BuildInfo;
use crate::proto::Response;

pub(super) fn handle() -> Response {
    Response::build(&BuildInfo::current())
}
