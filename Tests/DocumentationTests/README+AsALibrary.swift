// doc:begin README.md
import Logging
import NetResilience

func watchThePath() async throws {  // doc:hidden
    let monitor = NetlinkMonitor(
        filter: InterfaceFilter(["eth*", "wlan0"]), holdDown: .seconds(2), logger: Logger(label: "app"))
    try await monitor.start()
    for await transition in monitor.transitions() {
        switch transition.kind {
        case .initial: print("path:", transition.path.status)
        case .lost(let reason): print("lost:", reason)  // stop retrying; keep dialogs
        case .restored(let downtime): print("back after", downtime)  // re-register now
        case .changed(let change): print("changed:", change)  // new Contact, re-INVITE
        }
    }
}  // doc:hidden
// doc:end
