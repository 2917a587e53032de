/// The usual SIP lab: host `client` joined by one link to host `registrar`, where a
/// ``LabRegistrar`` (Kamailio) runs on ``LabAddress/service4``, reached through the client's
/// default route.
///
/// Invariant: a value, made once by ``NetworkLab/addClientAndRegistrar(link:options:)``; the
/// lab owns both hosts, the link and Kamailio, and removes them with everything else.
public struct ClientAndRegistrar: Sendable {
    public let lab: NetworkLab
    /// The host a client under test runs in.
    public let client: LabHost
    /// The host Kamailio runs in; its end of ``link`` is the link's name + `p`.
    public let server: LabHost
    /// The client's link to the registrar's host, metric 100.
    public let link: LabLink
    public let registrar: LabRegistrar
    /// The client end's interface and addresses when the lab came up (faults may change them since:
    /// ``NetworkLab/addresses(of:)`` says where it stands now).
    public let initial: LinkAddresses
}

extension NetworkLab {
    /// Adds hosts `client` and `registrar`, joins them with a link named `link` (the client's default
    /// route), and starts Kamailio in `registrar` with `options`.
    public func addClientAndRegistrar(
        link name: String = "nrc0", options: RegistrarOptions = .init()
    ) async throws -> ClientAndRegistrar {
        let client = try await addHost("client")
        let server = try await addHost("registrar")
        let link = try await connect(client, to: server, as: name)
        let registrar = try await startRegistrar(in: server, options: options)
        return ClientAndRegistrar(
            lab: self, client: client, server: server, link: link, registrar: registrar,
            initial: addresses(of: link))
    }
}
