// doc:begin README.md
import HTTPGate
import Logging
import NetResilience

func gateTheHTTPClient(  // doc:hidden
    monitor: NetlinkMonitor, logger: Logger, pool: some ConnectionPool,  // doc:hidden
    session: some HTTPSession, url: String  // doc:hidden
) async throws {  // doc:hidden
    let api = HTTPGate(service: "api.http", logger: logger, onClosed: { await pool.close() })
    let http = HTTPGatePlugin(gates: [api])  // its drain deadline runs on the clock the manager lends
    let manager = ResilienceManager(source: monitor, plugins: [ChatPlugin(), http], logger: logger)
    for service in http.services { await manager.register(service) }

    // Every request of the service goes through the gate:
    let (data, _) = try await api.perform { try await session.data(from: url) }
    _ = data  // doc:hidden
}  // doc:hidden
// doc:end
