internal import CNetlink

extension NetlinkMonitor {
    /// The version of the libnl-3 library loaded at run time (`3.7.0`), read from the library
    /// itself, not from the headers the package was built against.
    public static var libnlVersion: String { "\(nl_ver_maj).\(nl_ver_min).\(nl_ver_mic)" }
}
