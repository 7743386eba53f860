// Package providertest holds the helpers that the tests of the
// OpenAI-style adapters (openaichat, deepseek, responses) share: httptest
// servers that record what they were sent and serve SSE or JSON fixtures
// byte for byte (or stall, cut the connection, or send only keep-alives);
// fixture files and their events; a Sink that records frames and a Stream
// runner with a deadline that only prevents a hang; checks of what a
// request carried, and that nothing from the environment leaked into it;
// and the request mockllm's Default script answers with tool calls.
//
// It is imported only by tests. It must not fake an adapter's Go
// interfaces: providers are faked at the HTTP boundary only.
package providertest
