// netres-bench: `netres-bench runtime` runs the runtime figures (RuntimeBenchmarks.swift).
switch CommandLine.arguments.dropFirst().first {
case "runtime":
    await runRuntimeBenchmarks()
default:
    print("usage: netres-bench runtime")
}
