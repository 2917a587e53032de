internal import Foundation
internal import Glibc
import NIOCore
import NIOPosix
public import ServiceLifecycle

/// The unix stream control socket of `netres run`: one command per line, one reply per command.
///
/// Invariants: the socket file is mode 0600 and its directory, when the server creates it, 0700;
/// a stale socket file is replaced; the file is removed on shutdown. A line longer than 64 KiB
/// ends the connection. Graceful shutdown stops accepting and cancels open connections.
public struct ControlServer: Service {
    public typealias Handler = @Sendable (String) async -> String

    public let path: String
    let handler: Handler

    /// - Parameter handler: turns one request line into its reply (ending in a newline).
    public init(path: String, handler: @escaping Handler) {
        self.path = path
        self.handler = handler
    }

    /// Binds the socket (so `ctl` works as soon as this returns) and serves until graceful shutdown.
    public func run() async throws {
        let server = try await bind()
        defer { unlink(path) }
        do {
            try await cancelWhenGracefulShutdown {
                try await withThrowingDiscardingTaskGroup { group in
                    try await server.executeThenClose { connections in
                        for try await connection in connections {
                            group.addTask { try? await serve(connection) }
                        }
                    }
                }
            }
        } catch is CancellationError {
            // Graceful shutdown: stop serving quietly.
        }
    }

    func bind() async throws -> NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never> {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        if !FileManager.default.fileExists(atPath: directory) {
            guard mkdir(directory, 0o700) == 0 || errno == EEXIST else {
                throw DaemonError.system("mkdir \(directory)")
            }
        }
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        guard chmod(path, 0o600) == 0 else {
            try? await server.channel.close()
            throw DaemonError.system("chmod \(path)")
        }
        return server
    }

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async throws {
        try await connection.executeThenClose { inbound, outbound in
            var pending = ByteBuffer()
            for try await var chunk in inbound {
                pending.writeBuffer(&chunk)
                while let newline = pending.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
                    let length = newline - pending.readerIndex
                    let line = pending.readString(length: length) ?? ""
                    pending.moveReaderIndex(forwardBy: 1)
                    try await reply(to: line, outbound)
                }
                guard pending.readableBytes <= 65536 else {
                    try await outbound.write(ByteBuffer(string: "error: line too long\n"))
                    return
                }
            }
            if pending.readableBytes > 0 {
                try await reply(to: pending.readString(length: pending.readableBytes)!, outbound)
            }
        }
    }

    private func reply(to line: String, _ outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) async throws {
        guard !line.allSatisfy(\.isWhitespace) else { return }
        try await outbound.write(ByteBuffer(string: await handler(line)))
    }
}
