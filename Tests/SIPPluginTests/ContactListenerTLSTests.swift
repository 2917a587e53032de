import ChildProcesses
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NetworkLab
import Synchronization
import Testing

@testable import SIPPlugin

/// A TLS flow's Contact (`;transport=tls`) is reachable over TLS from any source, presenting the
/// account's certificate: a TLS peer that trusts the account's CA sends an OPTIONS straight to
/// the flow's address and port and gets the answer on its own connection.
@Suite(
    .serialized, .enabled(if: TestCertificates.openssl != nil, "openssl missing: SKIPPED"),
    .timeLimit(.minutes(3)))
struct ContactListenerTLSTests {
    let group = MultiThreadedEventLoopGroup.singleton

    /// Certificates for 127.0.0.1 in a folder of their own; removed after `body`.
    func withCertificates(_ body: (TestCertificates) async throws -> Void) async throws {
        let folder = "/tmp/nr-contact-tls-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await body(
            await TestCertificates(
                folder: folder, serverName: "netres.test", serverAddress: "127.0.0.1", validity: .valid))
    }

    /// A TLS server on loopback standing in for the registrar: it completes handshakes and
    /// keeps its connections open, nothing more.
    func registrar(_ certificates: TestCertificates) async throws -> any Channel {
        let configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificates.serverCertificate).map {
                .certificate($0)
            },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: certificates.serverKey, format: .pem)))
        let context = try NIOSSLContext(configuration: configuration)
        return try await ServerBootstrap(group: group)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    /// Sends `request` over a new TLS connection (trusting `caFile`) to `port`; the first message back.
    func exchange(_ request: SIPMessage, port: Int, caFile: String) async throws -> SIPMessage? {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
        let context = try NIOSSLContext(configuration: configuration)
        let answer = group.any().makePromise(of: SIPMessage?.self)
        let channel = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(NIOSSLClientHandler(context: context, serverHostname: nil))
                    try pipeline.addHandler(ByteToMessageHandler(SIPFrameDecoder()))
                    try pipeline.addHandler(FirstMessage(answer))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        let guardTask = channel.eventLoop.scheduleTask(in: .seconds(10)) { answer.succeed(nil) }
        channel.closeFuture.whenComplete { _ in answer.succeed(nil) }
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: request.serialized()))
        let message = try await answer.futureResult.get()
        guardTask.cancel()
        try? await channel.close()
        return message
    }

    @Test func anOptionsOverTLSToTheContactIsAnsweredOnItsConnection() async throws {
        try await withCertificates { certificates in
            let server = try await registrar(certificates)
            defer { server.close(promise: nil) }
            let log = ThrottledLog(logger: testLogger("contact-tls"), clock: ContinuousClock())
            let tls = SIPTLSSettings(
                caFile: certificates.caFile, certificateFile: certificates.serverCertificate,
                keyFile: certificates.serverKey)
            let flow = try await SIPTransport.open(
                kind: .tls, localHost: "127.0.0.1", remote: try #require(server.localAddress), tls: tls, log: log,
                onLost: { _ in }, onPong: {},
                inbound: { message, reply in
                    if message.method == "OPTIONS" { reply(message.makeResponse(status: 200, reason: "OK")) }
                })
            let listener = try #require(flow.listener, "a TLS flow with a certificate listens at its Contact")
            let contact = "sip:alice@\(flow.sentBy);transport=tls"
            let request = ContactProbe.options(to: contact, sentBy: "198.18.0.77:5061", transport: "TLS")
            let answer = try #require(try await exchange(request, port: flow.localPort, caFile: certificates.caFile))
            #expect(answer.status == 200)
            // Marked by the listener with where the request really came from (RFC 3261 §18.2.1).
            #expect(answer.headers["Via"]?.contains(";received=127.0.0.1") == true, "\(answer.headers)")
            #expect(flow.isActive, "the registrar's flow is untouched")
            await flow.close()
            #expect(await eventually(within: .seconds(5)) { !listener.channel.isActive })
        }
    }

    @Test func aTLSFlowWithoutACertificateOpensNoListener() async throws {
        try await withCertificates { certificates in
            let server = try await registrar(certificates)
            defer { server.close(promise: nil) }
            let log = ThrottledLog(logger: testLogger("contact-tls"), clock: ContinuousClock())
            let flow = try await SIPTransport.open(
                kind: .tls, localHost: "127.0.0.1", remote: try #require(server.localAddress),
                tls: SIPTLSSettings(caFile: certificates.caFile), log: log, onLost: { _ in }, onPong: {},
                inbound: { _, _ in })
            #expect(flow.listener == nil && flow.isActive)
            await flow.close()
        }
    }
}

/// Completes its promise with the first SIP message a connection carries.
private final class FirstMessage: ChannelInboundHandler, Sendable {
    typealias InboundIn = SIPStreamFrame
    let promise: EventLoopPromise<SIPMessage?>

    init(_ promise: EventLoopPromise<SIPMessage?>) { self.promise = promise }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .message(let message) = unwrapInboundIn(data) { promise.succeed(message) }
    }
}
