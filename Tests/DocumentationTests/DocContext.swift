// What the documentation's fragments take from the app around them, as the compiled copies'
// hidden wrappers receive it: stand-ins with the shapes the pages use.

/// The app's own connection pool, closed when the gate drains (README, "HTTP services").
protocol ConnectionPool: Sendable {
    func close() async
}

/// The app's HTTP client, shaped like `URLSession.data(from:)` (README, "HTTP services").
protocol HTTPSession: Sendable {
    func data(from url: String) async throws -> ([UInt8], Int)
}
