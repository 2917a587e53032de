internal import Foundation
internal import NIOCore
internal import NIOPosix
internal import NIOSSL
internal import NIOTLS

/// How an account's TLS flow (`transport: tls`) checks the registrar and presents itself.
///
/// Invariants: the registrar's certificate is always verified (chain to the CA file, or to the
/// system trust store when none is given, and the name: ``serverName``, else the registrar host,
/// else its IP address); TLS 1.2 is the oldest version offered. A client certificate is sent only
/// when both its file and its key file are given.
public struct SIPTLSSettings: Hashable, Sendable {
    /// PEM file of the CA certificates to trust; nil trusts the system's store.
    public var caFile: String?
    /// PEM client certificate (chain) and its private key, for registrars that ask for one.
    public var certificateFile: String?
    public var keyFile: String?
    /// The name the registrar's certificate must carry, sent as SNI; nil uses the registrar host
    /// (an IP literal is then matched against the certificate's IP addresses, with no SNI).
    public var serverName: String?

    public init(
        caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil, serverName: String? = nil
    ) {
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.serverName = serverName
    }
}

/// The registrar's certificate, although signed by a trusted CA, does not carry the configured name.
struct CertificateNameMismatch: Error {
    var expected: String
    var names: [String]
}

/// A TLS flow that cannot work until someone changes a certificate or a setting: retrying is
/// pointless, so the agent reports it as a permanent failure naming what failed.
struct SIPTLSFailure: Error, CustomStringConvertible {
    var description: String
}

enum SIPTLS {
    /// How long closing a flow waits for the registrar's close_notify. A flow closed because its
    /// local address vanished never gets one, and recovery (close stale flow, register) waits
    /// this long: NIO SSL's default is 5 s.
    static let closeNotifyWait = TimeAmount.milliseconds(250)

    /// How long a TLS handshake may take once TCP connected, like the 5 s connect timeout and
    /// well under an action's timeout: a server that accepts and never finishes the handshake
    /// costs each attempt this long, then the attempt fails (transient: the action backs off).
    static let handshakeTimeout = TimeAmount.seconds(5)

    /// The NIO SSL context of `settings`.
    /// - Throws: ``SIPTLSFailure`` naming the file that cannot be read, or that is not a regular
    ///   file (never read: a FIFO would block the event loop that connects).
    static func context(_ settings: SIPTLSSettings) throws -> NIOSSLContext {
        if let (path, kind) = settings.nonRegularFile {
            throw SIPTLSFailure(description: "TLS settings unusable: \(path) is \(kind), not a regular file")
        }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.certificateVerification = .fullVerification
        configuration.shutdownTimeout = closeNotifyWait
        do {
            if let caFile = settings.caFile {
                configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
            }
            if let certificate = settings.certificateFile, let key = settings.keyFile {
                configuration.certificateChain = try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) }
                configuration.privateKey = .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
            }
            return try NIOSSLContext(configuration: configuration)
        } catch {
            let files = [settings.caFile, settings.certificateFile, settings.keyFile].compactMap { $0 }
            throw SIPTLSFailure(description: "TLS settings unusable (\(files.joined(separator: ", "))): \(error)")
        }
    }

    /// The SNI and expected certificate name: ``SIPTLSSettings/serverName``, else `host` unless it
    /// is an IP literal (nil: the certificate must then carry the registrar's IP address).
    static func serverName(_ settings: SIPTLSSettings, host: String) -> String? {
        if let name = settings.serverName { return name }
        return (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil
    }

    /// Whether a certificate naming `names` (its DNS names) is for `host`: equal ignoring case and
    /// a trailing dot, or a `*.` wildcard standing for exactly one leftmost label.
    static func names(_ names: [String], cover host: String) -> Bool {
        func normal(_ name: String) -> String { (name.hasSuffix(".") ? String(name.dropLast()) : name).lowercased() }
        let wanted = normal(host)
        return names.map(normal).contains { name in
            if name == wanted { return true }
            guard name.hasPrefix("*."), let dot = wanted.firstIndex(of: ".") else { return false }
            return wanted[dot...] == name.dropFirst(1) && wanted[..<dot].count > 0
        }
    }

    /// The DNS names of `certificate`'s subject alternative names, as they may be logged: the
    /// first 16, each cut to 253 bytes, anything but printable ASCII shown as `?` (the certificate
    /// comes from the wire).
    static func dnsNames(of certificate: NIOSSLCertificate) -> [String] {
        certificate._subjectAlternativeNames().lazy.filter { $0.nameType == .dnsName }.prefix(16).map {
            String(
                decoding: Array($0.contents).prefix(253).map { (0x21...0x7e).contains($0) ? $0 : 0x3f }, as: UTF8.self)
        }
    }

    /// Whether a failed handshake is the certificate's fault (permanent) rather than the network's.
    static func isCertificateFailure(_ error: any Error) -> Bool {
        if error is CertificateNameMismatch { return true }
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname { return true }
        if case .handshakeFailed(let reason)? = error as? NIOSSLError {
            return "\(reason)".uppercased().contains("CERTIFICATE")
        }
        return false
    }

    /// Why the certificate `leaf` was refused, in words: expiry and validity dates are checked
    /// here; anything else is an untrusted chain or a wrong name, as `error` says.
    static func explain(_ error: any Error, leaf: NIOSSLCertificate?, expected: String, trust: String) -> String {
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return "its certificate does not name \(expected)"
        }
        if let mismatch = error as? CertificateNameMismatch {
            return
                "its certificate does not name \(mismatch.expected) (it names \(mismatch.names.joined(separator: ", ")))"
        }
        let now = time(nil)
        if let leaf {
            if leaf.notValidAfter < now {
                return "its certificate expired on \(Date(timeIntervalSince1970: TimeInterval(leaf.notValidAfter)))"
            }
            if leaf.notValidBefore > now {
                return
                    "its certificate is not valid before \(Date(timeIntervalSince1970: TimeInterval(leaf.notValidBefore)))"
            }
        }
        return "its certificate is not signed by a trusted CA (\(trust)) or does not name \(expected): \(error)"
    }
}

extension SIPTLS {
    /// Waits for `channel`'s handshake; on failure closes it and throws, for a certificate the
    /// client must not trust, a ``SIPTLSFailure`` saying why (see ``explain(_:leaf:expected:trust:)``).
    static func verify(
        _ channel: any Channel, handshake: EventLoopPromise<Void>, local: SocketAddress, interface: Int32? = nil,
        remote: SocketAddress, serverName: String?, tls: SIPTLSSettings
    ) async throws {
        do {
            try await handshake.futureResult.get()
        } catch {
            try? await channel.close()
            guard isCertificateFailure(error) else { throw error }
            let leaf = await offeredLeaf(local: local, interface: interface, remote: remote, serverName: serverName)
            let why = explain(
                error, leaf: leaf, expected: serverName ?? remote.ipAddress ?? "\(remote)",
                trust: tls.caFile.map { "CA file \($0)" } ?? "the system trust store")
            throw SIPTLSFailure(description: "TLS: registrar \(remote) refused: \(why)")
        }
    }

    /// The leaf certificate `remote` offers, fetched by a handshake that verifies nothing and is
    /// aborted as soon as the certificate arrived; only used to explain a refusal. Nil when none
    /// arrives within 5 s. Leaves over `interface` like the flow it explains.
    static func offeredLeaf(
        local: SocketAddress, interface: Int32? = nil, remote: SocketAddress, serverName: String?
    ) async -> NIOSSLCertificate? {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.certificateVerification = .noHostnameVerification
        configuration.shutdownTimeout = closeNotifyWait
        guard let context = try? NIOSSLContext(configuration: configuration) else { return nil }
        let group = MultiThreadedEventLoopGroup.singleton
        let offered = group.any().makePromise(of: NIOSSLCertificate?.self)
        let channel = try? await ClientBootstrap(group: group)
            .connectTimeout(.seconds(5))
            .bound(toInterface: interface)
            .bind(to: local)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(context: context, serverHostname: serverName) {
                        certificates, verdict in
                        offered.succeed(certificates.first)
                        verdict.succeed(NIOSSLVerificationResult.failed)
                    }
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(to: remote).get()
        guard let channel else {
            offered.succeed(nil)
            return nil
        }
        channel.closeFuture.whenComplete { _ in offered.succeed(nil) }
        let timeout = channel.eventLoop.scheduleTask(in: TimeAmount.seconds(5)) { () -> Void in
            channel.close(promise: nil)
        }
        let leaf = try? await offered.futureResult.get()
        timeout.cancel()
        try? await channel.close()
        return leaf
    }
}

/// Completes `done` when the TLS handshake finished, or fails it with the handshake's error (or
/// the connection's end); sits right after the TLS handler. Keeps the peer's leaf certificate,
/// as offered, for ``SIPTLS/explain(_:leaf:expected:trust:)``.
/// Invariant: `done` is completed within ``SIPTLS/handshakeTimeout`` of the connection becoming
/// active: a handshake still open then fails with ``TLSHandshakeTimedOut`` and the connection closes.
final class TLSHandshakeWaiter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    let done: EventLoopPromise<Void>
    private var deadline: Scheduled<Void>?
    /// The configured server name, which the certificate's DNS names must cover (NIO SSL also
    /// accepts a certificate naming the peer's IP address, whatever name was configured).
    let expectedName: String?

    init(done: EventLoopPromise<Void>, expectedName: String?) {
        self.done = done
        self.expectedName = expectedName
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { armDeadline(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        armDeadline(context: context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
    }

    private func armDeadline(context: ChannelHandlerContext) {
        guard deadline == nil else { return }
        let (done, channel) = (self.done, context.channel)
        deadline = context.eventLoop.scheduleTask(in: SIPTLS.handshakeTimeout) {
            done.fail(TLSHandshakeTimedOut())
            channel.close(promise: nil)
        }
        done.futureResult.whenComplete { [deadline] _ in deadline?.cancel() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted? = event as? TLSUserEvent {
            if let expectedName {
                let leaf = try? context.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self).peerCertificate
                let names = leaf.map(SIPTLS.dnsNames) ?? []
                guard SIPTLS.names(names, cover: expectedName) else {
                    done.fail(CertificateNameMismatch(expected: expectedName, names: names))
                    context.close(promise: nil)
                    return
                }
            }
            done.succeed()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        done.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        done.fail(ChannelError.eof)
        context.fireChannelInactive()
    }
}

/// The registrar accepted the TCP connection but did not finish the TLS handshake within
/// ``SIPTLS/handshakeTimeout`` (a network fault, not a certificate one).
struct TLSHandshakeTimedOut: Error, CustomStringConvertible {
    var description: String {
        "TLS handshake not finished within \(SIPTLS.handshakeTimeout.nanoseconds / 1_000_000_000) s"
    }
}

/// Sits between the socket and the TLS handler: on ``Abort`` it closes the connection below TLS,
/// skipping the close_notify exchange (for a flow whose local address is gone).
final class TLSAbortHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = NIOAny

    struct Abort {}

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        if event is Abort {
            context.close(mode: .all, promise: promise)
        } else {
            context.triggerUserOutboundEvent(event, promise: promise)
        }
    }
}
