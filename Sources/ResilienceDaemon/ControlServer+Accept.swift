import Logging
import NIOCore
internal import Synchronization

extension ControlServer {
    /// Serves the connections of `server` until its stream ends (the listening socket closed),
    /// then cancels the connections still open. Once `stopping`, buffered connections are closed
    /// unread.
    func acceptLoop(_ server: NIOAsyncChannel<Connection, Never>, stopping: borrowing Atomic<Bool>) async {
        let table = ConnectionTable()
        try? await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { connections in
                var refused = 0
                for try await connection in connections {
                    if stopping.load(ordering: .acquiring) {
                        group.addTask { try? await connection.channel.executeThenClose { _, _ in } }
                        continue
                    }
                    if let why = refusal(of: connection.peer) {
                        refused += 1
                        // The first ten, then one per hundred: a flood is not a log flood.
                        if refused <= 10 || refused % 100 == 0 {
                            let peer = connection.peer.map(\.description) ?? "unknown"
                            logger.warning(
                                "control: refused a connection",
                                metadata: ["peer": "\(peer)", "reason": "\(why)", "refused.total": "\(refused)"])
                        }
                        group.addTask { await refuse(connection.channel, why) }
                        continue
                    }
                    let (id, evicted, evictions) = table.admit(connection.channel.channel, cap: limits.maxConnections)
                    if let evicted {
                        evicted.close(promise: nil)
                        // Logged once per hundred, so a client flood is not a log flood.
                        if evictions % 100 == 1 {
                            logger.notice(
                                "control: too many connections, closed the one idle the longest",
                                metadata: ["limit": "\(limits.maxConnections)", "closed.total": "\(evictions)"])
                        }
                    }
                    group.addTask {
                        defer { table.remove(id) }
                        try? await serve(connection, id: id, table: table)
                    }
                }
            }
            group.cancelAll()
        }
    }
}
